#include "kagent/gpu/driver.hpp"

#include <dlfcn.h>

#include <fmt/format.h>

namespace kagent {

namespace {

// Two-step stringizing, so a name that cuda.h #defines to a versioned symbol becomes that symbol.
#define KAGENT_STR2(x) #x
#define KAGENT_STR(x) KAGENT_STR2(x)

struct Loaded {
  DriverApi api{};
  bool ok = false;
  std::string why;
};

Loaded load() {
  Loaded l;
  // Never unloaded: the runner uses it for the process lifetime.
  void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) {
    const char* err = dlerror();
    l.why = fmt::format("the NVIDIA driver library libcuda.so.1 could not be loaded ({})", err ? err : "unknown");
    return l;
  }
  l.ok = true;
#define KAGENT_DRIVER_BIND(name)                                                                \
  if (l.ok) {                                                                                   \
    l.api.name = reinterpret_cast<decltype(l.api.name)>(dlsym(lib, KAGENT_STR(name)));          \
    if (l.api.name == nullptr) {                                                                \
      l.ok = false;                                                                             \
      l.why = fmt::format("libcuda.so.1 has no symbol {} (driver too old?)", KAGENT_STR(name)); \
    }                                                                                           \
  }
  KAGENT_DRIVER_FUNCTIONS(KAGENT_DRIVER_BIND)
#undef KAGENT_DRIVER_BIND
  return l;
}

}  // namespace

const DriverApi* load_driver(std::string* why) {
  static Loaded loaded = load();
  if (!loaded.ok) {
    if (why) *why = loaded.why;
    return nullptr;
  }
  return &loaded.api;
}

std::string driver_error_text(const DriverApi& api, CUresult rc) {
  const char* name = nullptr;
  const char* text = nullptr;
  api.cuGetErrorName(rc, &name);
  api.cuGetErrorString(rc, &text);
  return fmt::format("{}: {}", name ? name : fmt::format("CUDA error {}", int(rc)), text ? text : "unknown error");
}

std::string format_uuid(const CUuuid& id) {
  std::string hex;
  for (int i = 0; i < 16; ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) hex += '-';
    hex += fmt::format("{:02x}", static_cast<unsigned char>(id.bytes[i]));
  }
  return "GPU-" + hex;
}

}  // namespace kagent
