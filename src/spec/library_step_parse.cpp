#include "library_step_parse.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <limits>
#include <string_view>

namespace kagent::spec_detail {

namespace {

using Json = PlanJsonValue;

// The keys of one step object: each read at most once, unknown ones refused with the list.
class StepObject {
 public:
  StepObject(const PlanJson& in, const Json& v, std::string key, std::initializer_list<std::string_view> allowed)
      : in_(in), v_(v), key_(std::move(key)) {
    if (!v.is_object()) in.fail(key_, fmt::format("expected an object, got {}", show(v)));
    for (const auto& item : v.items()) {
      if (std::find(allowed.begin(), allowed.end(), item.key()) == allowed.end())
        in.fail(key_ + "." + item.key(), fmt::format("unknown key (allowed: {})", fmt::join(allowed, ", ")));
    }
  }

  std::string sub(std::string_view name) const { return fmt::format("{}.{}", key_, name); }
  bool has(std::string_view name) const { return v_.contains(name); }

  // A tensor name (operator tensor or scratch buffer); "" when optional and absent.
  std::string tensor(std::string_view name, bool required) const {
    if (!has(name)) {
      if (required) in_.fail(sub(name), "missing: the name of a tensor or scratch buffer");
      return "";
    }
    const Json& t = v_.at(name);
    if (!t.is_string() || !is_identifier(t.get<std::string>()))
      in_.fail(sub(name), fmt::format("expected the name of a tensor or scratch buffer, got {}", show(t)));
    return t.get<std::string>();
  }

  Expr size(std::string_view name, int64_t min_literal) const {
    if (!has(name)) in_.fail(sub(name), "missing: an integer or an expression (e.g. \"x.shape[0]\")");
    return in_.expr_item(v_.at(name), sub(name), min_literal);
  }
  std::optional<Expr> optional_size(std::string_view name, int64_t min_literal) const {
    if (!has(name)) return std::nullopt;
    return in_.expr_item(v_.at(name), sub(name), min_literal);
  }

  bool boolean(std::string_view name) const {
    if (!has(name)) return false;
    const Json& b = v_.at(name);
    if (!b.is_boolean()) in_.fail(sub(name), fmt::format("expected true or false, got {}", show(b)));
    return b.get<bool>();
  }

  double number(std::string_view name, double fallback) const {
    if (!has(name)) return fallback;
    const Json& x = v_.at(name);
    if (!x.is_number()) in_.fail(sub(name), fmt::format("expected a number, got {}", show(x)));
    const double d = x.get<double>();
    if (!std::isfinite(d)) in_.fail(sub(name), "expected a finite number");
    return d;
  }

  Activation activation(std::initializer_list<Activation> allowed) const {
    if (!has("activation")) return Activation::none;
    const Json& a = v_.at("activation");
    std::vector<std::string_view> names;
    for (Activation x : allowed) names.push_back(activation_name(x));
    auto parsed = a.is_string() ? parse_activation(a.get<std::string>()) : std::nullopt;
    if (!parsed || std::find(allowed.begin(), allowed.end(), *parsed) == allowed.end())
      in_.fail(sub("activation"), fmt::format("expected one of {}, got {}", fmt::join(names, ", "), show(a)));
    return *parsed;
  }

  StepCompute compute() const {
    if (!has("compute")) return StepCompute::automatic;
    const Json& c = v_.at("compute");
    if (c.is_string() && c.get<std::string>() == "auto") return StepCompute::automatic;
    if (c.is_string() && c.get<std::string>() == "tf32") return StepCompute::tf32;
    in_.fail(sub("compute"), fmt::format("expected \"auto\" (IEEE fp32 for f32 tensors, fp32 accumulation for "
                                         "f16/bf16) or \"tf32\", got {}",
                                         show(c)));
  }

  // [v] or [v, v, ...] (one per spatial dimension, at most 3), each >= min_literal.
  std::vector<Expr> per_dim(std::string_view name, int64_t min_literal) const {
    if (!has(name)) return {};
    const Json& x = v_.at(name);
    if (x.is_number_integer() || x.is_string()) return {in_.expr_item(x, sub(name), min_literal)};
    return in_.dims(x, sub(name), 3, min_literal);
  }

 private:
  const PlanJson& in_;
  const Json& v_;
  std::string key_;
};

GemmStep parse_gemm(const PlanJson& in, const Json& v, const std::string& key) {
  StepObject o(in, v, key, {"a",        "b",        "c",        "d",        "bias",       "trans_a",  "trans_b",
                            "m",        "n",        "k",        "lda",      "ldb",        "ldc",      "ldd",
                            "batch",    "stride_a", "stride_b", "stride_c", "stride_d",   "offset_a", "offset_b",
                            "offset_c", "offset_d", "alpha",    "beta",     "activation", "compute"});
  GemmStep g;
  g.a = o.tensor("a", true);
  g.b = o.tensor("b", true);
  g.d = o.tensor("d", true);
  g.c = o.tensor("c", false);
  g.bias = o.tensor("bias", false);
  g.trans_a = o.boolean("trans_a");
  g.trans_b = o.boolean("trans_b");
  g.m = o.size("m", 1);
  g.n = o.size("n", 1);
  g.k = o.size("k", 1);
  g.lda = o.optional_size("lda", 1);
  g.ldb = o.optional_size("ldb", 1);
  g.ldc = o.optional_size("ldc", 1);
  g.ldd = o.optional_size("ldd", 1);
  if (auto b = o.optional_size("batch", 1)) g.batch = *b;
  g.stride_a = o.optional_size("stride_a", 0);
  g.stride_b = o.optional_size("stride_b", 0);
  g.stride_c = o.optional_size("stride_c", 0);
  g.stride_d = o.optional_size("stride_d", 0);
  g.offset_a = o.optional_size("offset_a", 0);
  g.offset_b = o.optional_size("offset_b", 0);
  g.offset_c = o.optional_size("offset_c", 0);
  g.offset_d = o.optional_size("offset_d", 0);
  g.alpha = o.number("alpha", 1.0);
  g.beta = o.number("beta", 0.0);
  g.activation = o.activation({Activation::none, Activation::relu, Activation::gelu_tanh});
  g.compute = o.compute();
  if (g.beta != 0.0 && g.c.empty())
    in.fail(o.sub("beta"), fmt::format("beta = {} needs \"c\", the matrix it scales", g.beta));
  if (g.c.empty() && (g.ldc || g.stride_c || g.offset_c))
    in.fail(o.sub(g.ldc ? "ldc" : g.stride_c ? "stride_c" : "offset_c"), "given without \"c\"");
  return g;
}

ConvStep parse_conv(const PlanJson& in, const Json& v, const std::string& key) {
  StepObject o(in, v, key,
               {"x", "w", "y", "bias", "stride", "padding", "dilation", "output_padding", "groups", "transposed",
                "activation", "compute"});
  ConvStep c;
  c.x = o.tensor("x", true);
  c.w = o.tensor("w", true);
  c.y = o.tensor("y", true);
  c.bias = o.tensor("bias", false);
  c.stride = o.per_dim("stride", 1);
  c.padding = o.per_dim("padding", 0);
  c.dilation = o.per_dim("dilation", 1);
  c.output_padding = o.per_dim("output_padding", 0);
  if (o.has("groups")) c.groups = o.size("groups", 1);
  c.transposed = o.boolean("transposed");
  c.activation = o.activation({Activation::none, Activation::relu});
  c.compute = o.compute();
  if (!c.transposed && !c.output_padding.empty())
    in.fail(o.sub("output_padding"), "only a transposed convolution (\"transposed\": true) has an output padding");
  return c;
}

}  // namespace

Launch parse_library_step(const PlanJson& in, const PlanJsonValue& v, const std::string& key) {
  if (v.size() != 1) {
    std::vector<std::string> keys;
    for (const auto& item : v.items()) keys.push_back(item.key());
    in.fail(key, fmt::format("a library step is an object with one key, gemm or conv, holding its settings; got "
                             "keys {}",
                             fmt::join(keys, ", ")));
  }
  Launch l;
  if (v.contains("gemm")) {
    l.kind = StepKind::gemm;
    l.gemm = parse_gemm(in, v.at("gemm"), key + ".gemm");
    l.kernel = "gemm (cuBLASLt)";
  } else {
    l.kind = StepKind::conv;
    l.conv = parse_conv(in, v.at("conv"), key + ".conv");
    l.kernel = "conv (cuDNN)";
  }
  return l;
}

}  // namespace kagent::spec_detail
