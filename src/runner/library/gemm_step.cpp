#include "gemm_step.hpp"

#include <fmt/format.h>

#include <vector>

#include "../device.hpp"
#include "kagent/gpu/libraries.hpp"

namespace kagent::runner {

namespace {

cudaDataType_t cuda_type(DType t) {
  switch (t) {
    case DType::f16:
      return CUDA_R_16F;
    case DType::bf16:
      return CUDA_R_16BF;
    default:
      return CUDA_R_32F;
  }
}

// The largest power of two (up to 256) dividing the address: cuBLASLt picks kernels whose vector
// loads need no more alignment than the pointers have.
uint32_t alignment(CUdeviceptr p) {
  uint32_t a = 256;
  while (a > 1 && p % a != 0) a /= 2;
  return a;
}

void lt_check(cublasStatus_t st, const std::string& what) {
  if (st != CUBLAS_STATUS_SUCCESS) throw PlanError(fmt::format("{}: cuBLASLt status {}", what, static_cast<int>(st)));
}

class GemmRunner final : public LibraryStepRunner {
 public:
  GemmRunner(const CublasLtApi& lt, const GemmStep& g, const GemmShape& s, const GemmPointers& p, std::string where)
      : lt_(lt),
        p_(p),
        alpha_(static_cast<float>(g.alpha)),
        beta_(static_cast<float>(g.beta)),
        where_(std::move(where)) {
    // The destructor does not run when the constructor throws: release what was made so far.
    try {
      build(g, s);
    } catch (...) {
      release_descriptors();
      if (handle_) lt_.cublasLtDestroy(handle_);
      throw;
    }
  }

  ~GemmRunner() override {
    release_descriptors();
    if (handle_) lt_.cublasLtDestroy(handle_);
  }

 private:
  void build(const GemmStep& g, const GemmShape& s) {
    lt_check(lt_.cublasLtCreate(&handle_), where_ + ": cublasLtCreate");
    const cudaDataType_t ab = cuda_type(s.dtype);
    d_type_ = cuda_type(s.d_dtype);
    // f32 operands: IEEE fp32 (pedantic: no TF32, no reduced-precision reductions) unless the plan
    // asked for TF32; half operands: fp32 accumulation.
    std::vector<cublasComputeType_t> computes;
    std::string compute_text;
    if (s.dtype == DType::f32 && g.compute == StepCompute::tf32) {
      computes = {CUBLAS_COMPUTE_32F_FAST_TF32};
      compute_text = "TF32 tensor cores";
    } else if (s.dtype == DType::f32) {
      // Pedantic first; plain 32F (still IEEE fp32 FMAs, no TF32) when no pedantic kernel fits the epilogue.
      computes = {CUBLAS_COMPUTE_32F_PEDANTIC, CUBLAS_COMPUTE_32F};
      compute_text = "IEEE fp32";
    } else {
      computes = {CUBLAS_COMPUTE_32F};
      compute_text = "fp32 accumulation";
    }
    std::string last;
    for (cublasComputeType_t ct : computes) {
      bool ok = false;
      try {
        ok = try_prepare(g, s, ct, ab, last);
      } catch (const PlanError& e) {  // a descriptor this compute type refuses: try the next one
        last = e.what();
      }
      if (ok) {
        description_ = fmt::format("cuBLASLt gemm {}x{}x{}{} {} ({}{}){}", s.m, s.n, s.k,
                                   s.batch > 1 ? fmt::format(" x{}", s.batch) : "", dtype_name(s.dtype), compute_text,
                                   ct == CUBLAS_COMPUTE_32F_PEDANTIC ? ", pedantic" : "", epilogue_text(g));
        return;
      }
      release_descriptors();
    }
    throw PlanError(fmt::format("{}: cuBLASLt has no algorithm for this product ({})", where_, last));
  }

 public:
  size_t workspace_bytes() const override { return workspace_; }
  const std::string& description() const override { return description_; }

  void enqueue(CUstream stream, CUdeviceptr workspace, size_t workspace_bytes, const std::string& context) override {
    const void* c = reinterpret_cast<const void*>(p_.c ? p_.c : p_.d);
    // Column-major view: the first operand is B, the second A (see gemm_step.hpp).
    cublasStatus_t st = lt_.cublasLtMatmul(
        handle_, op_, &alpha_, reinterpret_cast<const void*>(p_.b), layout_b_, reinterpret_cast<const void*>(p_.a),
        layout_a_, &beta_, c, layout_c_, reinterpret_cast<void*>(p_.d), layout_d_, &algo_,
        reinterpret_cast<void*>(workspace), workspace_bytes, reinterpret_cast<cudaStream_t>(stream));
    if (st != CUBLAS_STATUS_SUCCESS)
      throw CudaError(CUDA_ERROR_UNKNOWN,
                      fmt::format("{}: {}: cublasLtMatmul failed (status {})", context, where_, static_cast<int>(st)),
                      false);
  }

 private:
  static std::string epilogue_text(const GemmStep& g) {
    std::string e;
    if (g.activation != Activation::none) e = std::string(activation_name(g.activation));
    if (!g.bias.empty()) e += e.empty() ? "bias" : "+bias";
    return e.empty() ? "" : fmt::format(", epilogue {}", e);
  }

  cublasLtMatrixLayout_t layout(cudaDataType_t type, int64_t rows, int64_t cols, int64_t ld, int64_t batch,
                                int64_t stride, const char* name) {
    cublasLtMatrixLayout_t l = nullptr;
    lt_check(lt_.cublasLtMatrixLayoutCreate(&l, type, static_cast<uint64_t>(rows), static_cast<uint64_t>(cols), ld),
             fmt::format("{}: the layout of {}", where_, name));
    if (batch > 1) {
      const int32_t count = static_cast<int32_t>(batch);
      lt_check(lt_.cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count, sizeof(count)),
               where_ + ": batch count");
      lt_check(
          lt_.cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride, sizeof(stride)),
          where_ + ": batch stride");
    }
    return l;
  }

  bool try_prepare(const GemmStep& g, const GemmShape& s, cublasComputeType_t ct, cudaDataType_t ab, std::string& why) {
    lt_check(lt_.cublasLtMatmulDescCreate(&op_, ct, CUDA_R_32F), where_ + ": cublasLtMatmulDescCreate");
    // Column-major D^T (n x m) = op(B)^T (n x k) op(A)^T (k x m). Row-major B stored k x n is the
    // column-major n x k we need (no transpose); stored n x k (trans_b) it is k x n (transpose).
    const cublasOperation_t tb = g.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
    const cublasOperation_t ta = g.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
    lt_check(lt_.cublasLtMatmulDescSetAttribute(op_, CUBLASLT_MATMUL_DESC_TRANSA, &tb, sizeof(tb)),
             where_ + ": transa");
    lt_check(lt_.cublasLtMatmulDescSetAttribute(op_, CUBLASLT_MATMUL_DESC_TRANSB, &ta, sizeof(ta)),
             where_ + ": transb");
    cublasLtEpilogue_t epi = CUBLASLT_EPILOGUE_DEFAULT;
    const bool bias = !g.bias.empty();
    if (g.activation == Activation::relu)
      epi = bias ? CUBLASLT_EPILOGUE_RELU_BIAS : CUBLASLT_EPILOGUE_RELU;
    else if (g.activation == Activation::gelu_tanh)
      epi = bias ? CUBLASLT_EPILOGUE_GELU_BIAS : CUBLASLT_EPILOGUE_GELU;
    else if (bias)
      epi = CUBLASLT_EPILOGUE_BIAS;
    lt_check(lt_.cublasLtMatmulDescSetAttribute(op_, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof(epi)),
             where_ + ": epilogue");
    if (bias) {
      const void* bias_ptr = reinterpret_cast<const void*>(p_.bias);
      lt_check(lt_.cublasLtMatmulDescSetAttribute(op_, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias_ptr, sizeof(bias_ptr)),
               where_ + ": bias pointer");
      const cudaDataType_t bias_type = d_type_;
      lt_check(
          lt_.cublasLtMatmulDescSetAttribute(op_, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &bias_type, sizeof(bias_type)),
          where_ + ": bias type");
      const int64_t bias_stride = 0;  // one bias for every batch index
      lt_check(lt_.cublasLtMatmulDescSetAttribute(op_, CUBLASLT_MATMUL_DESC_BIAS_BATCH_STRIDE, &bias_stride,
                                                  sizeof(bias_stride)),
               where_ + ": bias batch stride");
    }
    // Stored shapes in column-major terms: row-major r x c with ld is column-major c x r with ld.
    const int64_t b_rows = g.trans_b ? s.k : s.n, b_cols = g.trans_b ? s.n : s.k;
    const int64_t a_rows = g.trans_a ? s.m : s.k, a_cols = g.trans_a ? s.k : s.m;
    layout_b_ = layout(ab, b_rows, b_cols, s.ldb, s.batch, s.stride_b, "b");
    layout_a_ = layout(ab, a_rows, a_cols, s.lda, s.batch, s.stride_a, "a");
    layout_c_ = layout(d_type_, s.n, s.m, p_.c ? s.ldc : s.ldd, s.batch, p_.c ? s.stride_c : s.stride_d, "c");
    layout_d_ = layout(d_type_, s.n, s.m, s.ldd, s.batch, s.stride_d, "d");

    lt_check(lt_.cublasLtMatmulPreferenceCreate(&pref_), where_ + ": preference");
    const uint64_t ws = kLibraryWorkspaceLimit;
    lt_check(lt_.cublasLtMatmulPreferenceSetAttribute(pref_, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof(ws)),
             where_ + ": workspace limit");
    const std::pair<cublasLtMatmulPreferenceAttributes_t, CUdeviceptr> aligns[] = {
        {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, p_.b},
        {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, p_.a},
        {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, p_.c ? p_.c : p_.d},
        {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, p_.d}};
    for (const auto& [attr, ptr] : aligns) {
      const uint32_t a = alignment(ptr);
      lt_check(lt_.cublasLtMatmulPreferenceSetAttribute(pref_, attr, &a, sizeof(a)), where_ + ": alignment");
    }
    cublasLtMatmulHeuristicResult_t result{};
    int found = 0;
    cublasStatus_t st = lt_.cublasLtMatmulAlgoGetHeuristic(handle_, op_, layout_b_, layout_a_, layout_c_, layout_d_,
                                                           pref_, 1, &result, &found);
    if (st != CUBLAS_STATUS_SUCCESS || found == 0) {
      why = fmt::format("heuristic status {}, {} algorithm{}", static_cast<int>(st), found, found == 1 ? "" : "s");
      return false;
    }
    algo_ = result.algo;
    workspace_ = result.workspaceSize;
    return true;
  }

  void release_descriptors() {
    for (cublasLtMatrixLayout_t* l : {&layout_a_, &layout_b_, &layout_c_, &layout_d_}) {
      if (*l) lt_.cublasLtMatrixLayoutDestroy(*l);
      *l = nullptr;
    }
    if (op_) lt_.cublasLtMatmulDescDestroy(op_);
    op_ = nullptr;
    if (pref_) lt_.cublasLtMatmulPreferenceDestroy(pref_);
    pref_ = nullptr;
  }

  const CublasLtApi& lt_;
  GemmPointers p_;
  float alpha_, beta_;
  std::string where_, description_;
  cudaDataType_t d_type_ = CUDA_R_32F;
  cublasLtHandle_t handle_ = nullptr;
  cublasLtMatmulDesc_t op_ = nullptr;
  cublasLtMatrixLayout_t layout_a_ = nullptr, layout_b_ = nullptr, layout_c_ = nullptr, layout_d_ = nullptr;
  cublasLtMatmulPreference_t pref_ = nullptr;
  cublasLtMatmulAlgo_t algo_{};
  size_t workspace_ = 0;
};

}  // namespace

std::unique_ptr<LibraryStepRunner> make_gemm_runner(const GemmStep& g, const GemmShape& s, const GemmPointers& p,
                                                    const std::string& where) {
  std::string why;
  const CublasLtApi* lt = load_cublaslt(&why);
  if (!lt) throw PlanError(fmt::format("{}: {}", where, why));
  return std::make_unique<GemmRunner>(*lt, g, s, p, where);
}

}  // namespace kagent::runner
