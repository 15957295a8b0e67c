#include "kagent/gpu/libraries.hpp"

#include <dlfcn.h>
#include <fmt/format.h>

#include "kagent/common/toolkit_library.hpp"

namespace kagent {

namespace {

// Resolves every slot of `api` from `lib`; false with *why naming the first missing symbol.
#define KAGENT_LIBRARY_RESOLVE(name)                                         \
  api.name = reinterpret_cast<decltype(api.name)>(dlsym(lib, #name));        \
  if (!api.name) {                                                           \
    why = fmt::format("{} has no {} (too old a version?)", api.path, #name); \
    return false;                                                            \
  }

bool resolve(void* lib, CublasLtApi& api, std::string& why) {
  KAGENT_CUBLASLT_FUNCTIONS(KAGENT_LIBRARY_RESOLVE)
  return true;
}

bool resolve([[maybe_unused]] void* lib, [[maybe_unused]] CudnnApi& api, std::string& why) {
#if KAGENT_HAVE_CUDNN
  KAGENT_CUDNN_FUNCTIONS(KAGENT_LIBRARY_RESOLVE)
  return true;
#else
  why = "this kagent was built without cuDNN's headers (cudnn.h was not found at configure time)";
  return false;
#endif
}
#undef KAGENT_LIBRARY_RESOLVE

template <typename Api>
struct Loaded {
  Api api;
  bool ok = false;
  std::string why;
};

template <typename Api>
Loaded<Api> load(const std::vector<std::string>& sonames, const char* what) {
  Loaded<Api> l;
  std::string why;
  void* lib = open_cuda_library(sonames, &why, &l.api.path);  // never closed: used for the process lifetime
  if (!lib) {
    l.why = fmt::format("{} is not available: {}", what, why);
    return l;
  }
  l.ok = resolve(lib, l.api, l.why);
  return l;
}

}  // namespace

const CublasLtApi* load_cublaslt(std::string* why) {
  static const Loaded<CublasLtApi> l =
      load<CublasLtApi>({"libcublasLt.so.13", "libcublasLt.so.12", "libcublasLt.so"}, "cuBLASLt");
  if (!l.ok && why) *why = l.why;
  return l.ok ? &l.api : nullptr;
}

const CudnnApi* load_cudnn(std::string* why) {
  static const Loaded<CudnnApi> l = load<CudnnApi>({"libcudnn.so.9", "libcudnn.so"}, "cuDNN");
  if (!l.ok && why) *why = l.why;
  return l.ok ? &l.api : nullptr;
}

std::string cublaslt_description(const CublasLtApi& api) {
  const size_t v = api.cublasLtGetVersion();  // major * 10000 + minor * 100 + patch
  return fmt::format("cuBLASLt {}.{}.{} ({})", v / 10000, v / 100 % 100, v % 100, api.path);
}

std::string cudnn_description(const CudnnApi& api) {
#if KAGENT_HAVE_CUDNN
  const size_t v = api.cudnnGetVersion();  // cuDNN 9: major * 10000 + minor * 100 + patch
  return fmt::format("cuDNN {}.{}.{} ({})", v / 10000, v / 100 % 100, v % 100, api.path);
#else
  return fmt::format("cuDNN ({}; built without cudnn.h)", api.path);
#endif
}

}  // namespace kagent
