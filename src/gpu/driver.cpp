#include "kagent/gpu/driver.hpp"

#include <dlfcn.h>

#include <mutex>

#include <fmt/format.h>

namespace kagent {

namespace {

struct Loaded {
  DriverApi api{};
  bool ok = false;
  std::string why;
};

template <typename F>
bool bind(void* lib, const char* symbol, F*& slot, std::string& why) {
  slot = reinterpret_cast<F*>(dlsym(lib, symbol));
  if (slot == nullptr) why = fmt::format("libcuda.so.1 has no symbol {}", symbol);
  return slot != nullptr;
}

Loaded load() {
  Loaded l;
  // Never unloaded: the runner keeps using it for the process lifetime.
  void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) {
    const char* err = dlerror();
    l.why = fmt::format("the NVIDIA driver library libcuda.so.1 could not be loaded ({})", err ? err : "unknown");
    return l;
  }
  auto& a = l.api;
  l.ok = bind(lib, "cuInit", a.cuInit, l.why) && bind(lib, "cuDriverGetVersion", a.cuDriverGetVersion, l.why) &&
         bind(lib, "cuDeviceGetCount", a.cuDeviceGetCount, l.why) && bind(lib, "cuDeviceGet", a.cuDeviceGet, l.why) &&
         bind(lib, "cuDeviceGetName", a.cuDeviceGetName, l.why) &&
         bind(lib, "cuDeviceGetAttribute", a.cuDeviceGetAttribute, l.why) &&
         bind(lib, "cuDeviceTotalMem_v2", a.cuDeviceTotalMem, l.why) &&
         bind(lib, "cuGetErrorString", a.cuGetErrorString, l.why);
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
  const char* s = nullptr;
  if (api.cuGetErrorString(rc, &s) != CUDA_SUCCESS || s == nullptr) return fmt::format("CUDA error {}", int(rc));
  return fmt::format("{} (CUDA error {})", s, int(rc));
}

}  // namespace kagent
