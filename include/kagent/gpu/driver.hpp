#pragma once
// The CUDA driver API, loaded with dlopen on first use. kagent links nothing that needs
// libcuda.so.1 at load time, so it starts, prints help and compiles on machines without a GPU;
// kagent-runner uses the same table for everything it does on the GPU.
#include <cuda.h>

#include <string>

namespace kagent {

// X(name) for every driver function kagent uses. cuda.h maps many names to versioned symbols
// (cuMemAlloc -> cuMemAlloc_v2); the loader resolves the symbol that the header maps to, so the
// table always matches the toolkit's declarations.
// One function per line, which clang-format does not keep for this macro.
// clang-format off
#define KAGENT_DRIVER_FUNCTIONS(X)                \
  X(cuInit)                                       \
  X(cuDriverGetVersion)                           \
  X(cuDeviceGetCount)                             \
  X(cuDeviceGet)                                  \
  X(cuDeviceGetName)                              \
  X(cuDeviceGetAttribute)                         \
  X(cuDeviceTotalMem)                             \
  X(cuGetErrorString)                             \
  X(cuGetErrorName)                               \
  X(cuDevicePrimaryCtxRetain)                     \
  X(cuDevicePrimaryCtxRelease)                    \
  X(cuCtxSetCurrent)                              \
  X(cuCtxSynchronize)                             \
  X(cuCtxResetPersistingL2Cache)                  \
  X(cuCtxGetLimit)                                \
  X(cuMemGetInfo)                                 \
  X(cuModuleLoadData)                             \
  X(cuModuleUnload)                               \
  X(cuModuleGetFunction)                          \
  X(cuFuncGetParamInfo)                           \
  X(cuFuncSetAttribute)                           \
  X(cuFuncGetAttribute)                           \
  X(cuLaunchKernel)                               \
  X(cuMemAlloc)                                   \
  X(cuMemFree)                                    \
  X(cuMemAllocHost)                               \
  X(cuMemFreeHost)                                \
  X(cuMemcpyDtoH)                                 \
  X(cuMemcpyDtoHAsync)                            \
  X(cuMemcpyHtoD)                                 \
  X(cuMemcpyDtoDAsync)                            \
  X(cuMemsetD8Async)                              \
  X(cuMemsetD32Async)                             \
  X(cuStreamCreate)                               \
  X(cuStreamDestroy)                              \
  X(cuStreamSynchronize)                          \
  X(cuEventCreate)                                \
  X(cuEventDestroy)                               \
  X(cuEventRecord)                                \
  X(cuEventSynchronize)                           \
  X(cuEventElapsedTime)                           \
  X(cuIpcOpenMemHandle)                           \
  X(cuIpcCloseMemHandle)                          \
  X(cuMemGetAddressRange)                         \
  X(cuDeviceGetUuid)                              \
  X(cuOccupancyMaxActiveClusters)                 \
  X(cuOccupancyMaxActiveBlocksPerMultiprocessor)  \
  X(cuStreamBeginCapture)                         \
  X(cuStreamEndCapture)                           \
  X(cuGraphInstantiate)                           \
  X(cuGraphLaunch)                                \
  X(cuGraphExecDestroy)                           \
  X(cuGraphDestroy)
// clang-format on

struct DriverApi {
#define KAGENT_DRIVER_SLOT(name) decltype(&::name) name = nullptr;
  KAGENT_DRIVER_FUNCTIONS(KAGENT_DRIVER_SLOT)
#undef KAGENT_DRIVER_SLOT
};

// The loaded driver, or nullptr with *why set (library missing, symbol missing).
const DriverApi* load_driver(std::string* why);

// "CUDA_ERROR_ILLEGAL_ADDRESS: an illegal memory access was encountered" style text.
std::string driver_error_text(const DriverApi& api, CUresult rc);

// A GPU's UUID as nvidia-smi prints it: "GPU-" and 32 hex digits in 8-4-4-4-12 groups.
std::string format_uuid(const CUuuid& id);

}  // namespace kagent
