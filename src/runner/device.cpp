#include "device.hpp"

#include <cstdio>

#include <fmt/format.h>

namespace kagent::runner {

const DriverApi& cu() {
  std::string why;
  const DriverApi* api = load_driver(&why);
  if (api == nullptr) throw CudaError(CUDA_ERROR_NO_DEVICE, why, false);
  return *api;
}

bool is_sticky(CUresult rc) {
  switch (rc) {
    case CUDA_ERROR_ILLEGAL_ADDRESS:
    case CUDA_ERROR_LAUNCH_FAILED:
    case CUDA_ERROR_ILLEGAL_INSTRUCTION:
    case CUDA_ERROR_MISALIGNED_ADDRESS:
    case CUDA_ERROR_INVALID_ADDRESS_SPACE:
    case CUDA_ERROR_INVALID_PC:
    case CUDA_ERROR_HARDWARE_STACK_ERROR:
    case CUDA_ERROR_ASSERT:
    case CUDA_ERROR_LAUNCH_TIMEOUT:
    case CUDA_ERROR_ECC_UNCORRECTABLE:
    case CUDA_ERROR_CONTEXT_IS_DESTROYED:
    case CUDA_ERROR_UNKNOWN:
      return true;
    default:
      return false;
  }
}

void check(CUresult rc, const std::string& what) {
  if (rc == CUDA_SUCCESS) return;
  throw CudaError(rc, fmt::format("{}: {}", what, driver_error_text(cu(), rc)), is_sticky(rc));
}

DeviceBuffer::DeviceBuffer(size_t bytes) : bytes_(bytes) {
  // Zero-size tensors still get a distinct, valid pointer.
  check(cu().cuMemAlloc(&ptr_, bytes == 0 ? 256 : bytes), fmt::format("cuMemAlloc({} bytes)", bytes));
}

DeviceBuffer::~DeviceBuffer() {
  if (ptr_) cu().cuMemFree(ptr_);
}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& o) noexcept {
  if (this != &o) {
    if (ptr_) cu().cuMemFree(ptr_);
    ptr_ = o.ptr_;
    bytes_ = o.bytes_;
    o.ptr_ = 0;
    o.bytes_ = 0;
  }
  return *this;
}

HostBuffer::HostBuffer(size_t bytes) : bytes_(bytes) {
  check(cu().cuMemAllocHost(&ptr_, bytes == 0 ? 8 : bytes), fmt::format("cuMemAllocHost({} bytes)", bytes));
}

HostBuffer::~HostBuffer() {
  if (ptr_) cu().cuMemFreeHost(ptr_);
}

HostBuffer& HostBuffer::operator=(HostBuffer&& o) noexcept {
  if (this != &o) {
    if (ptr_) cu().cuMemFreeHost(ptr_);
    ptr_ = o.ptr_;
    bytes_ = o.bytes_;
    o.ptr_ = nullptr;
    o.bytes_ = 0;
  }
  return *this;
}

Event::Event() {
  check(cu().cuEventCreate(&e_, CU_EVENT_DEFAULT), "cuEventCreate");
}

Event::~Event() {
  if (e_) cu().cuEventDestroy(e_);
}

Module::Module(const std::string& image) {
  check(cu().cuModuleLoadData(&mod_, image.data()), "cuModuleLoadData");
}

Module::~Module() {
  if (mod_) cu().cuModuleUnload(mod_);
}

CUfunction Module::function(const std::string& name) const {
  CUfunction f = nullptr;
  if (cu().cuModuleGetFunction(&f, mod_, name.c_str()) != CUDA_SUCCESS) return nullptr;
  return f;
}

Device::Device(int ordinal) {
  const DriverApi& api = cu();
  check(api.cuInit(0), "cuInit");
  check(api.cuDeviceGet(&dev_, ordinal), fmt::format("cuDeviceGet({})", ordinal));
  check(api.cuDevicePrimaryCtxRetain(&ctx_, dev_), "cuDevicePrimaryCtxRetain");
  check(api.cuCtxSetCurrent(ctx_), "cuCtxSetCurrent");
  check(api.cuStreamCreate(&stream_, CU_STREAM_NON_BLOCKING), "cuStreamCreate");

  char name[256] = {};
  api.cuDeviceGetName(name, sizeof name, dev_);
  summary_.name = name;
  auto attr = [&](CUdevice_attribute a) {
    int v = 0;
    api.cuDeviceGetAttribute(&v, a, dev_);
    return v;
  };
  summary_.cc_major = attr(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR);
  summary_.cc_minor = attr(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
  summary_.sms = attr(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
  summary_.l2_bytes = attr(CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE);
  // Peak DRAM bandwidth: double data rate x memory clock x bus width.
  double clock_hz = attr(CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE) * 1e3;
  double bus_bytes = attr(CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH) / 8.0;
  summary_.peak_gbs = 2.0 * clock_hz * bus_bytes / 1e9;
  max_smem_optin_ = attr(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN);
}

Device::~Device() {
  const DriverApi& api = cu();
  if (stream_) api.cuStreamDestroy(stream_);
  if (ctx_) api.cuDevicePrimaryCtxRelease(dev_);
}

int Device::attribute(CUdevice_attribute a) const {
  int v = 0;
  check(cu().cuDeviceGetAttribute(&v, a, dev_), "cuDeviceGetAttribute");
  return v;
}

void Device::sync() const {
  check(cu().cuStreamSynchronize(stream_), "cuStreamSynchronize");
}

void phase(const std::string& text) {
  std::fprintf(stderr, "kagent-phase: %s\n", text.c_str());
  std::fflush(stderr);
}

}  // namespace kagent::runner
