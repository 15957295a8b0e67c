#include "cublas_sgemm.hpp"

#include <cublas_v2.h>
#include <dlfcn.h>

#include <stdexcept>

#include <fmt/format.h>

#include "kagent/common/toolkit_library.hpp"

namespace kagent::runner {

namespace {

#define KAGENT_CUBLAS_FUNCTIONS(X) \
  X(cublasCreate_v2) X(cublasDestroy_v2) X(cublasSetStream_v2) X(cublasSetMathMode) X(cublasSgemm_v2)

struct CublasApi {
#define KAGENT_CUBLAS_SLOT(name) decltype(&::name) name = nullptr;
  KAGENT_CUBLAS_FUNCTIONS(KAGENT_CUBLAS_SLOT)
#undef KAGENT_CUBLAS_SLOT
};

CublasApi g_api;

}  // namespace

CublasSgemm* CublasSgemm::get(std::string* why) {
  static std::string failure;
  static CublasSgemm* instance = []() -> CublasSgemm* {
    void* lib = open_toolkit_library("libcublas.so", {}, &failure);
    if (!lib) return nullptr;
#define KAGENT_CUBLAS_LOAD(name)                                          \
  g_api.name = reinterpret_cast<decltype(g_api.name)>(dlsym(lib, #name)); \
  if (!g_api.name) {                                                      \
    failure = "libcublas.so has no " #name;                               \
    return nullptr;                                                       \
  }
    KAGENT_CUBLAS_FUNCTIONS(KAGENT_CUBLAS_LOAD)
#undef KAGENT_CUBLAS_LOAD
    cublasHandle_t h = nullptr;
    // cuBLAS binds to the calling thread's current context: the runner's primary context.
    if (cublasStatus_t st = g_api.cublasCreate_v2(&h); st != CUBLAS_STATUS_SUCCESS) {
      failure = fmt::format("cublasCreate failed (status {})", static_cast<int>(st));
      return nullptr;
    }
    // Full FP32: the default math mode, stated, so no TF32 tensor-core path is taken.
    g_api.cublasSetMathMode(h, CUBLAS_DEFAULT_MATH);
    auto* s = new CublasSgemm();  // lives as long as the process, like cuBLAS's own state
    s->handle_ = h;
    return s;
  }();
  if (!instance && why) *why = failure;
  return instance;
}

void CublasSgemm::run(CUstream stream, int n, CUdeviceptr a, CUdeviceptr b, CUdeviceptr c) {
  auto h = static_cast<cublasHandle_t>(handle_);
  if (cublasStatus_t st = g_api.cublasSetStream_v2(h, reinterpret_cast<cudaStream_t>(stream));
      st != CUBLAS_STATUS_SUCCESS)
    throw std::runtime_error(fmt::format("cublasSetStream failed (status {})", static_cast<int>(st)));
  const float one = 1.f, zero = 0.f;
  // Row-major C = A B is column-major C^T = B^T A^T: the same buffers, operands swapped.
  cublasStatus_t st =
      g_api.cublasSgemm_v2(h, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one, reinterpret_cast<const float*>(b), n,
                           reinterpret_cast<const float*>(a), n, &zero, reinterpret_cast<float*>(c), n);
  if (st != CUBLAS_STATUS_SUCCESS)
    throw std::runtime_error(fmt::format("cublasSgemm failed (status {})", static_cast<int>(st)));
}

}  // namespace kagent::runner
