#pragma once
// cuBLAS's FP32 matrix product, loaded with dlopen for one purpose: the FP32 roof of the
// roofline is what the vendor library reaches on this GPU (peaks.cpp). Nothing else in kagent
// uses cuBLAS, and a machine without it still gets a roof from kagent's own matrix product.
#include <cuda.h>

#include <string>

namespace kagent::runner {

class CublasSgemm {
 public:
  // The process's one instance, or nullptr with *why (no libcublas, or cuBLAS would not start).
  static CublasSgemm* get(std::string* why);

  // c = a b for row-major n x n FP32 matrices on `stream`, in full FP32 (no TF32 tensor cores).
  // Throws std::runtime_error with cuBLAS's status.
  void run(CUstream stream, int n, CUdeviceptr a, CUdeviceptr b, CUdeviceptr c);

 private:
  CublasSgemm() = default;
  void* handle_ = nullptr;
};

}  // namespace kagent::runner
