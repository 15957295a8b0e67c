#pragma once
// The CUDA driver API, loaded with dlopen on first use. kagent links nothing that needs
// libcuda.so.1 at load time, so it starts, prints help and compiles on machines without a GPU.
#include <cuda.h>

#include <string>

namespace kagent {

struct DriverApi {
  CUresult (*cuInit)(unsigned int);
  CUresult (*cuDriverGetVersion)(int*);
  CUresult (*cuDeviceGetCount)(int*);
  CUresult (*cuDeviceGet)(CUdevice*, int);
  CUresult (*cuDeviceGetName)(char*, int, CUdevice);
  CUresult (*cuDeviceGetAttribute)(int*, CUdevice_attribute, CUdevice);
  CUresult (*cuDeviceTotalMem)(size_t*, CUdevice);
  CUresult (*cuGetErrorString)(CUresult, const char**);
};

// The loaded driver, or nullptr with *why set (library missing, symbol missing).
const DriverApi* load_driver(std::string* why);

// "CUDA_ERROR_NO_DEVICE: no CUDA-capable device is detected" style text.
std::string driver_error_text(const DriverApi& api, CUresult rc);

}  // namespace kagent
