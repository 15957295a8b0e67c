// Library steps: names, and the shape rules that every caller (plan checker, runner) shares.
#include "kagent/spec/library_step.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <array>
#include <limits>
#include <string_view>

#include "kagent/spec/op.hpp"

namespace kagent {

namespace {

constexpr std::array<std::pair<Activation, std::string_view>, 3> kActivations = {{
    {Activation::none, "none"},
    {Activation::relu, "relu"},
    {Activation::gelu_tanh, "gelu_tanh"},
}};

constexpr int64_t kInt32Max = std::numeric_limits<int32_t>::max();

std::string shape_text(const std::vector<int64_t>& s) {
  return fmt::format("[{}]", fmt::join(s, ", "));
}

int64_t numel(const StepTensor& t) {
  int64_t n = 1;
  for (int64_t d : t.shape)
    if (__builtin_mul_overflow(n, d, &n)) return std::numeric_limits<int64_t>::max();
  return n;
}

// `key` by value: callers pass a key built in the call (gkey + ".a"), and GCC 13's
// -Wdangling-reference takes a reference parameter bound to a temporary for a dangling result.
const StepTensor& need(const StepTensorLookup& tensors, const std::string& name, std::string_view key) {
  const StepTensor* t = tensors(name);
  if (t == nullptr) throw StepError(std::string(key), fmt::format("unknown tensor '{}'", name));
  return *t;
}

bool library_dtype(DType t) {
  return t == DType::f32 || t == DType::f16 || t == DType::bf16;
}

// The last element a strided set of matrices touches, plus one: (batch-1)*stride + (rows-1)*ld + cols.
int64_t extent(int64_t batch, int64_t stride, int64_t rows, int64_t ld, int64_t cols) {
  __int128 e = static_cast<__int128>(batch - 1) * stride + static_cast<__int128>(rows - 1) * ld + cols;
  return e > std::numeric_limits<int64_t>::max() ? std::numeric_limits<int64_t>::max() : static_cast<int64_t>(e);
}

// One matrix operand of a GEMM: its stored rows x cols, leading dimension and batch stride.
struct Operand {
  const char* role;  // "a", "b", "c", "d"
  std::string name;
  int64_t rows, cols;
  const std::optional<Expr>& ld_expr;
  const std::optional<Expr>& stride_expr;
  const std::optional<Expr>& offset_expr;
};

void resolve_operand(const Operand& o, const std::string& gkey, const StepTensor& t, const StepIntEval& eval,
                     int64_t batch, int64_t& ld, int64_t& stride, int64_t& offset) {
  const std::string ld_key = fmt::format("{}.ld{}", gkey, o.role);
  const std::string stride_key = fmt::format("{}.stride_{}", gkey, o.role);
  const std::string offset_key = fmt::format("{}.offset_{}", gkey, o.role);
  offset = o.offset_expr ? eval(*o.offset_expr, offset_key) : 0;
  if (offset < 0) throw StepError(offset_key, fmt::format("offset_{} = {} is negative", o.role, offset));
  ld = o.ld_expr ? eval(*o.ld_expr, ld_key) : o.cols;
  if (ld < o.cols)
    throw StepError(ld_key, fmt::format("ld{} = {} is less than the {} columns of {} as stored ({} x {}, row-major)",
                                        o.role, ld, o.cols, o.name, o.rows, o.cols));
  if (!o.stride_expr && __builtin_mul_overflow(o.rows, ld, &stride))
    throw StepError(ld_key, fmt::format("ld{} = {}: {} rows of it overflow 64-bit integers", o.role, ld, o.rows));
  if (o.stride_expr) stride = eval(*o.stride_expr, stride_key);
  if (stride < 0) throw StepError(stride_key, fmt::format("stride_{} = {} is negative", o.role, stride));
  const int64_t span = extent(batch, stride, o.rows, ld, o.cols);
  int64_t need_elems = 0;
  if (__builtin_add_overflow(span, offset, &need_elems)) need_elems = std::numeric_limits<int64_t>::max();
  if (need_elems > numel(t))
    throw StepError(
        fmt::format("{}.{}", gkey, o.role),
        fmt::format("'{}' ({} {}, {} elements) is too small: {} batch{} of {} x {} with ld{} = {}, "
                    "stride_{} = {}{} reach element {}",
                    o.name, dtype_name(t.dtype), shape_text(t.shape), numel(t), batch, batch == 1 ? "" : "es", o.rows,
                    o.cols, o.role, ld, o.role, stride,
                    offset ? fmt::format(" from offset_{} = {}", o.role, offset) : std::string(), need_elems));
}

void check_written(const StepTensor& t, const std::string& name, const std::string& key) {
  if (t.is_input)
    throw StepError(key, fmt::format("'{}' is an operator input: a library step writes only outputs and scratch "
                                     "buffers",
                                     name));
}

// A bias vector: `count` values of the dtype of the tensor it is added to (`owner`, for the message).
void check_bias(const StepTensorLookup& tensors, const std::string& name, const std::string& key, DType dtype,
                const char* owner, int64_t count, const std::string& per) {
  const StepTensor& bias = need(tensors, name, key);
  if (bias.dtype != dtype)
    throw StepError(key, fmt::format("'{}' is {}: the bias has {} dtype ({})", name, dtype_name(bias.dtype), owner,
                                     dtype_name(dtype)));
  if (numel(bias) != count)
    throw StepError(key, fmt::format("'{}' has {} elements {}; the bias is one value per {}", name, numel(bias),
                                     shape_text(bias.shape), per));
}

}  // namespace

std::string_view step_kind_name(StepKind k) {
  switch (k) {
    case StepKind::kernel:
      return "kernel";
    case StepKind::gemm:
      return "gemm";
    case StepKind::conv:
      return "conv";
  }
  return "?";
}

std::string_view activation_name(Activation a) {
  for (const auto& [value, name] : kActivations)
    if (value == a) return name;
  return "?";
}

std::optional<Activation> parse_activation(std::string_view text) {
  for (const auto& [value, name] : kActivations)
    if (name == text) return value;
  return std::nullopt;
}

void check_step_precision(StepCompute compute, Precision p, const std::string& key) {
  if (compute == StepCompute::tf32 && p == Precision::fp32)
    throw StepError(key,
                    "\"compute\": \"tf32\" under the fp32 precision: fp32 means IEEE fp32 everywhere (use "
                    "\"auto\", or run with --precision tf32)");
}

GemmShape resolve_gemm(const GemmStep& g, const std::string& key, const StepTensorLookup& tensors,
                       const StepIntEval& eval) {
  const std::string gkey = key + ".gemm";
  GemmShape s;
  const StepTensor& a = need(tensors, g.a, gkey + ".a");
  const StepTensor& b = need(tensors, g.b, gkey + ".b");
  const StepTensor& d = need(tensors, g.d, gkey + ".d");
  if (!library_dtype(a.dtype))
    throw StepError(gkey + ".a",
                    fmt::format("'{}' is {}: a GEMM step takes f32, f16 or bf16 tensors", g.a, dtype_name(a.dtype)));
  if (b.dtype != a.dtype)
    throw StepError(gkey + ".b", fmt::format("'{}' is {} but '{}' is {}: A and B have one dtype", g.b,
                                             dtype_name(b.dtype), g.a, dtype_name(a.dtype)));
  if (d.dtype != a.dtype && d.dtype != DType::f32)
    throw StepError(gkey + ".d", fmt::format("'{}' is {}: D is {} (A's dtype) or f32", g.d, dtype_name(d.dtype),
                                             dtype_name(a.dtype)));
  if (g.compute == StepCompute::tf32 && a.dtype != DType::f32)
    throw StepError(gkey + ".compute",
                    fmt::format("\"tf32\" applies to f32 tensors; '{}' is {}", g.a, dtype_name(a.dtype)));
  s.dtype = a.dtype;
  s.d_dtype = d.dtype;
  check_written(d, g.d, gkey + ".d");
  for (const std::string* read : {&g.a, &g.b, &g.bias}) {
    if (*read == g.d)
      throw StepError(gkey + ".d", fmt::format("'{}' is also read as {}: a GEMM cannot write a matrix it reads "
                                               "(C may be D)",
                                               g.d,
                                               read == &g.a   ? "A"
                                               : read == &g.b ? "B"
                                                              : "the bias"));
  }

  s.m = eval(g.m, gkey + ".m");
  s.n = eval(g.n, gkey + ".n");
  s.k = eval(g.k, gkey + ".k");
  s.batch = eval(g.batch, gkey + ".batch");
  for (auto [v, name] : {std::pair{s.m, "m"}, {s.n, "n"}, {s.k, "k"}, {s.batch, "batch"}}) {
    if (v < 1 || v > kInt32Max)
      throw StepError(fmt::format("{}.{}", gkey, name),
                      fmt::format("{} = {}: must be from 1 to {}", name, v, kInt32Max));
  }

  resolve_operand({"a", g.a, g.trans_a ? s.k : s.m, g.trans_a ? s.m : s.k, g.lda, g.stride_a, g.offset_a}, gkey, a,
                  eval, s.batch, s.lda, s.stride_a, s.offset_a);
  resolve_operand({"b", g.b, g.trans_b ? s.n : s.k, g.trans_b ? s.k : s.n, g.ldb, g.stride_b, g.offset_b}, gkey, b,
                  eval, s.batch, s.ldb, s.stride_b, s.offset_b);
  resolve_operand({"d", g.d, s.m, s.n, g.ldd, g.stride_d, g.offset_d}, gkey, d, eval, s.batch, s.ldd, s.stride_d,
                  s.offset_d);
  if (s.batch > 1 && s.stride_d < extent(1, 0, s.m, s.ldd, s.n))
    throw StepError(gkey + ".stride_d", fmt::format("stride_d = {}: the {} output matrices of {} x {} (ldd {}) overlap",
                                                    s.stride_d, s.batch, s.m, s.n, s.ldd));
  if (!g.c.empty()) {
    const StepTensor& c = need(tensors, g.c, gkey + ".c");
    if (c.dtype != d.dtype)
      throw StepError(gkey + ".c", fmt::format("'{}' is {} but D ('{}') is {}: C and D have one dtype", g.c,
                                               dtype_name(c.dtype), g.d, dtype_name(d.dtype)));
    resolve_operand({"c", g.c, s.m, s.n, g.ldc, g.stride_c, g.offset_c}, gkey, c, eval, s.batch, s.ldc, s.stride_c,
                    s.offset_c);
    if (g.c == g.d && (s.ldc != s.ldd || s.stride_c != s.stride_d || s.offset_c != s.offset_d))
      throw StepError(gkey + ".c",
                      "C and D are the same tensor: they need the same ldc/ldd, stride_c/stride_d and "
                      "offset_c/offset_d");
  }
  if (!g.bias.empty())
    check_bias(tensors, g.bias, gkey + ".bias", d.dtype, "D's", s.n, fmt::format("column of D (n = {})", s.n));
  return s;
}

ConvShape resolve_conv(const ConvStep& c, const std::string& key, const StepTensorLookup& tensors,
                       const StepIntEval& eval) {
  const std::string ckey = key + ".conv";
  ConvShape s;
  const StepTensor& x = need(tensors, c.x, ckey + ".x");
  const StepTensor& w = need(tensors, c.w, ckey + ".w");
  const StepTensor& y = need(tensors, c.y, ckey + ".y");
  const size_t rank = x.shape.size();
  if (rank < 3 || rank > 5)
    throw StepError(ckey + ".x", fmt::format("'{}' has shape {}: a convolution reads N, C and 1 to 3 spatial "
                                             "dimensions (rank 3 to 5)",
                                             c.x, shape_text(x.shape)));
  s.spatial = static_cast<int>(rank) - 2;
  for (auto [t, name, role] : {std::tuple{&w, &c.w, "w"}, {&y, &c.y, "y"}}) {
    if (t->shape.size() != rank)
      throw StepError(fmt::format("{}.{}", ckey, role),
                      fmt::format("'{}' has shape {}: rank {} like x ('{}', {})", *name, shape_text(t->shape), rank,
                                  c.x, shape_text(x.shape)));
    if (t->dtype != x.dtype)
      throw StepError(fmt::format("{}.{}", ckey, role), fmt::format("'{}' is {} but x is {}: one dtype", *name,
                                                                    dtype_name(t->dtype), dtype_name(x.dtype)));
  }
  if (!library_dtype(x.dtype))
    throw StepError(ckey + ".x", fmt::format("'{}' is {}: a convolution step takes f32, f16 or bf16 tensors", c.x,
                                             dtype_name(x.dtype)));
  if (c.compute == StepCompute::tf32 && x.dtype != DType::f32)
    throw StepError(ckey + ".compute",
                    fmt::format("\"tf32\" applies to f32 tensors; '{}' is {}", c.x, dtype_name(x.dtype)));
  // cuDNN takes int dimensions; bounding them here also keeps every product below in 64 bits.
  for (const auto& t : {&x, &w, &y})
    for (int64_t d : t->shape)
      if (d > kInt32Max) throw StepError(ckey, fmt::format("a dimension of {} is over {}", d, kInt32Max));
  s.dtype = x.dtype;
  check_written(y, c.y, ckey + ".y");
  for (const std::string* read : {&c.x, &c.w, &c.bias})
    if (*read == c.y)
      throw StepError(ckey + ".y", fmt::format("'{}' is also read by this step: no in-place convolution", c.y));

  auto per_dim = [&](const std::vector<Expr>& v, const char* name, int64_t fallback, int64_t lo) {
    const std::string k = fmt::format("{}.{}", ckey, name);
    if (!v.empty() && v.size() != 1 && v.size() != static_cast<size_t>(s.spatial))
      throw StepError(k, fmt::format("{} values for {} spatial dimension{}: give one, or one per dimension", v.size(),
                                     s.spatial, s.spatial == 1 ? "" : "s"));
    std::vector<int64_t> out;
    for (int i = 0; i < s.spatial; ++i) {
      if (v.empty()) {
        out.push_back(fallback);
        continue;
      }
      const size_t j = v.size() == 1 ? 0 : static_cast<size_t>(i);
      const int64_t x_i = eval(v[j], fmt::format("{}[{}]", k, j));
      if (x_i < lo || x_i > kInt32Max)
        throw StepError(fmt::format("{}[{}]", k, j),
                        fmt::format("{} = {}: must be from {} to {}", name, x_i, lo, kInt32Max));
      out.push_back(x_i);
    }
    return out;
  };
  s.stride = per_dim(c.stride, "stride", 1, 1);
  s.padding = per_dim(c.padding, "padding", 0, 0);
  s.dilation = per_dim(c.dilation, "dilation", 1, 1);
  s.output_padding = per_dim(c.output_padding, "output_padding", 0, 0);
  s.groups = eval(c.groups, ckey + ".groups");
  if (s.groups < 1 || s.groups > kInt32Max) throw StepError(ckey + ".groups", fmt::format("groups = {}", s.groups));

  s.n = x.shape[0];
  s.c_in = x.shape[1];
  if (s.c_in % s.groups != 0)
    throw StepError(ckey + ".groups",
                    fmt::format("groups = {} does not divide the {} input channels of '{}'", s.groups, s.c_in, c.x));
  if (!c.transposed) {
    s.c_out = w.shape[0];
    if (w.shape[1] != s.c_in / s.groups || s.c_out % s.groups != 0)
      throw StepError(ckey + ".w", fmt::format("'{}' has shape {}: a convolution of {} input channels in {} group{} "
                                               "needs [C_out, {}, kernel...] with C_out a multiple of {}",
                                               c.w, shape_text(w.shape), s.c_in, s.groups, s.groups == 1 ? "" : "s",
                                               s.c_in / s.groups, s.groups));
  } else {
    s.c_out = w.shape[1] * s.groups;
    if (w.shape[0] != s.c_in)
      throw StepError(ckey + ".w", fmt::format("'{}' has shape {}: a transposed convolution of {} input channels "
                                               "needs [{}, C_out / groups, kernel...]",
                                               c.w, shape_text(w.shape), s.c_in, s.c_in));
  }
  std::vector<int64_t> expected = {s.n, s.c_out};
  for (int i = 0; i < s.spatial; ++i) {
    const int64_t in = x.shape[2 + i], k = w.shape[2 + i];
    const int64_t st = s.stride[i], p = s.padding[i], dl = s.dilation[i], op = s.output_padding[i];
    int64_t out = 0;
    if (!c.transposed) {
      // In 128 bits: the shapes come from op.json and the settings from the plan, both unbounded.
      const __int128 span =
          static_cast<__int128>(in) + 2 * static_cast<__int128>(p) - static_cast<__int128>(dl) * (k - 1) - 1;
      out = span < 0 ? 0 : static_cast<int64_t>(span / st + 1);
    } else {
      if (op >= st && op >= dl)
        throw StepError(
            fmt::format("{}.output_padding", ckey),
            fmt::format("output_padding {} must be smaller than the stride ({}) or the dilation ({})", op, st, dl));
      const __int128 full = static_cast<__int128>(in - 1) * st - 2 * static_cast<__int128>(p) +
                            static_cast<__int128>(dl) * (k - 1) + op + 1;
      out = full > kInt32Max ? kInt32Max + int64_t{1} : static_cast<int64_t>(full);
    }
    if (out < 1)
      throw StepError(ckey + ".padding",
                      fmt::format("spatial dimension {}: input {} with kernel {}, stride {}, padding {}, dilation {} "
                                  "leaves no output",
                                  i, in, k, st, p, dl));
    s.in.push_back(in);
    s.kernel.push_back(k);
    s.out.push_back(out);
    expected.push_back(out);
  }
  if (y.shape != expected)
    throw StepError(ckey + ".y", fmt::format("'{}' has shape {}; this {}convolution of x {} with w {} gives {}", c.y,
                                             shape_text(y.shape), c.transposed ? "transposed " : "",
                                             shape_text(x.shape), shape_text(w.shape), shape_text(expected)));
  if (!c.bias.empty())
    check_bias(tensors, c.bias, ckey + ".bias", x.dtype, "x's", s.c_out, fmt::format("output channel ({})", s.c_out));
  return s;
}

}  // namespace kagent
