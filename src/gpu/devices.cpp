#include "kagent/gpu/devices.hpp"

#include <fmt/format.h>

#include "kagent/gpu/driver.hpp"

namespace kagent {

GpuInventory query_gpus() {
  GpuInventory inv;
  std::string why;
  const DriverApi* api = load_driver(&why);
  if (api == nullptr) {
    inv.problem = why;
    return inv;
  }
  inv.driver_loaded = true;
  api->cuDriverGetVersion(&inv.driver_version);
  // cuInit creates no context; it only initialises the driver for this process.
  if (CUresult rc = api->cuInit(0); rc != CUDA_SUCCESS) {
    inv.problem = fmt::format("cuInit failed: {}", driver_error_text(*api, rc));
    return inv;
  }
  int count = 0;
  if (CUresult rc = api->cuDeviceGetCount(&count); rc != CUDA_SUCCESS) {
    inv.problem = fmt::format("cuDeviceGetCount failed: {}", driver_error_text(*api, rc));
    return inv;
  }
  for (int i = 0; i < count; ++i) {
    CUdevice dev{};
    if (api->cuDeviceGet(&dev, i) != CUDA_SUCCESS) continue;
    GpuInfo g;
    g.index = i;
    char name[256] = {};
    api->cuDeviceGetName(name, sizeof name, dev);
    g.name = name;
    CUuuid id{};
    if (api->cuDeviceGetUuid(&id, dev) == CUDA_SUCCESS) g.uuid = format_uuid(id);
    api->cuDeviceGetAttribute(&g.cc_major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev);
    api->cuDeviceGetAttribute(&g.cc_minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev);
    api->cuDeviceGetAttribute(&g.sm_count, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev);
    int l2 = 0;
    api->cuDeviceGetAttribute(&l2, CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, dev);
    g.l2_bytes = l2;
    size_t mem = 0;
    api->cuDeviceTotalMem(&mem, dev);
    g.memory_bytes = static_cast<int64_t>(mem);
    inv.gpus.push_back(std::move(g));
  }
  if (inv.gpus.empty() && inv.problem.empty()) inv.problem = "the driver reports no CUDA device";
  return inv;
}

}  // namespace kagent
