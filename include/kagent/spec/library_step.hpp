#pragma once
// Library steps of a launch plan: a GEMM through cuBLASLt or a convolution through cuDNN, written
// in the plan's `launch` list beside kernel launches and run in order on the plan's one stream.
// The model names tensors and sizes; the harness owns the library handles, the algorithm choice
// and the workspace, so no host code comes from the model.
//
//   {"gemm": {"a": "x", "b": "weight", "trans_b": true, "d": "out", "bias": "bias",
//             "m": "x.shape[0]", "n": "weight.shape[0]", "k": "x.shape[1]", "activation": "relu"}}
//   {"conv": {"x": "x", "w": "weight", "y": "y", "bias": "b", "stride": [2, 2], "padding": [1, 1],
//             "dilation": [1, 1], "groups": 1, "transposed": false, "activation": "none"}}
//
// Everything is row-major, as the rest of the plan format: a GEMM computes, for each batch index,
//   D = activation(alpha * op(A) @ op(B) + beta * C + bias)
// with op(A) m x k (A stored k x m when trans_a), op(B) k x n (B stored n x k when trans_b), C and D
// m x n, bias a vector of n values added to every row. Each matrix operand may start `offset_X`
// elements into its tensor and step `ldX` elements between rows, so a step can read or write a
// block of a larger matrix (two calls on the column halves of one weight: [x, h] @ W^T as
// x @ W[:, :I]^T + h @ W[:, I:]^T); the last element it touches must lie inside the tensor. A convolution reads NCW /
// NCHW / NCDHW tensors (the rank of x says 1-D, 2-D or 3-D) with PyTorch's weight layouts and output-size rules.
//
// The shapes are plan expressions; resolve_gemm / resolve_conv evaluate them and check everything
// that can be checked before a GPU: names, dtypes, extents inside the tensors, layouts, that no
// step writes an operator input. `kagent compile --op` and the runner call the same functions.
#include <functional>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "kagent/spec/dtype.hpp"
#include "kagent/spec/expr.hpp"

namespace kagent {

enum class Precision;

enum class StepKind { kernel, gemm, conv };
std::string_view step_kind_name(StepKind k);  // "kernel", "gemm", "conv"

// The elementwise tail a library applies before writing: cuBLASLt's epilogues, cuDNN's activation.
enum class Activation { none, relu, gelu_tanh };
std::string_view activation_name(Activation a);  // "none", "relu", "gelu_tanh"
std::optional<Activation> parse_activation(std::string_view text);

// How the products are computed. `automatic`: IEEE fp32 (no TF32, no reduced-precision reductions)
// for f32 operands, fp32 accumulation for f16/bf16 operands. `tf32`: f32 operands through TF32
// tensor cores; refused under the fp32 precision.
enum class StepCompute { automatic, tf32 };

struct GemmStep {
  std::string a, b, c, d, bias;  // c and bias optional ("")
  bool trans_a = false, trans_b = false;
  Expr m, n, k;
  std::optional<Expr> lda, ldb, ldc, ldd;  // elements between rows; default: packed
  // Elements from the tensor's first element to the operand's first one (default 0): with ld, a
  // block of columns or rows of a larger matrix (the weight of a concatenation, a slice of D).
  std::optional<Expr> offset_a, offset_b, offset_c, offset_d;
  Expr batch = Expr::constant(1);
  // Elements between consecutive matrices of a batch; default: packed (rows x ld); 0 reuses one
  // matrix for every batch index (a weight shared by a batch of inputs).
  std::optional<Expr> stride_a, stride_b, stride_c, stride_d;
  double alpha = 1.0, beta = 0.0;
  Activation activation = Activation::none;
  StepCompute compute = StepCompute::automatic;
};

struct ConvStep {
  std::string x, w, y, bias;  // bias optional ("")
  // One value per spatial dimension, or one for all of them; defaults 1, 0, 1, 0.
  std::vector<Expr> stride, padding, dilation, output_padding;
  Expr groups = Expr::constant(1);
  bool transposed = false;  // ConvTranspose: w is [C_in, C_out / groups, k...]
  Activation activation = Activation::none;
  StepCompute compute = StepCompute::automatic;
};

// The numbers of a GEMM step for one call, every one checked.
struct GemmShape {
  int64_t m = 0, n = 0, k = 0;
  int64_t lda = 0, ldb = 0, ldc = 0, ldd = 0;
  int64_t offset_a = 0, offset_b = 0, offset_c = 0, offset_d = 0;  // in elements
  int64_t batch = 1, stride_a = 0, stride_b = 0, stride_c = 0, stride_d = 0;
  DType dtype = DType::f32;    // of A and B
  DType d_dtype = DType::f32;  // of C, D and the bias: A's dtype or f32
};

struct ConvShape {
  int spatial = 2;  // 1, 2 or 3
  int64_t n = 0, c_in = 0, c_out = 0, groups = 1;
  std::vector<int64_t> in, out, kernel, stride, padding, dilation, output_padding;  // per spatial dim
  DType dtype = DType::f32;
};

// A problem with a library step: the plan key under the step ("launch[2].gemm.k") and what is
// wrong. The plan checker turns it into InputError (exit 2), the runner into a plan error.
class StepError : public std::runtime_error {
 public:
  StepError(std::string key, const std::string& what) : std::runtime_error(what), key_(std::move(key)) {}
  const std::string& key() const { return key_; }

 private:
  std::string key_;
};

// What a step may know of a tensor of the plan (operator tensor or scratch buffer).
struct StepTensor {
  std::vector<int64_t> shape;
  DType dtype = DType::f32;
  bool is_input = false;  // an operator input: library steps may read it, never write it
};
using StepTensorLookup = std::function<const StepTensor*(std::string_view name)>;
// Evaluates an expression of the plan to an integer, throwing StepError(key, ...) on a problem.
using StepIntEval = std::function<int64_t(const Expr& e, const std::string& key)>;

// `key` is the step's plan key ("launch[2]"). Throws StepError.
GemmShape resolve_gemm(const GemmStep& g, const std::string& key, const StepTensorLookup& tensors,
                       const StepIntEval& eval);
ConvShape resolve_conv(const ConvStep& c, const std::string& key, const StepTensorLookup& tensors,
                       const StepIntEval& eval);

// TF32 is refused under the fp32 precision (issue 10: no TF32 anywhere). Throws StepError.
void check_step_precision(StepCompute compute, Precision p, const std::string& key);

}  // namespace kagent
