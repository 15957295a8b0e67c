#include "kagent/spec/plan_check.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <optional>

#include "kagent/common/error.hpp"
#include "kagent/spec/device_constants.hpp"
#include "kagent/spec/op.hpp"

namespace kagent {

namespace {

std::string prefix(const Candidate& cand) {
  return fmt::format("{}:{}", cand.path.string(), cand.plan_line);
}

[[noreturn]] void fail(const Candidate& cand, const std::string& key, const std::string& what) {
  throw InputError(fmt::format("{}: plan key {}: {}", prefix(cand), key, what));
}

bool contains(const std::vector<std::string>& names, const std::string& name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

std::string list_or_none(const std::vector<std::string>& names) {
  return names.empty() ? std::string("none") : fmt::format("{}", fmt::join(names, ", "));
}

const KernelSignature* find_kernel(const std::vector<KernelSignature>& kernels, const std::string& name) {
  for (const auto& k : kernels) {
    if (k.name == name) return &k;
  }
  return nullptr;
}

void check_launch_kernel(const Candidate& cand, size_t index, const Launch& launch,
                         const std::vector<KernelSignature>& kernels) {
  std::string key = fmt::format("launch[{}]", index);
  const KernelSignature* sig = find_kernel(kernels, launch.kernel);
  if (sig == nullptr) {
    std::vector<std::string> defined;
    for (const auto& k : kernels) defined.push_back(k.name);
    fail(cand, key + ".kernel",
         fmt::format("kernel '{}' is not defined by the candidate (its extern \"C\" __global__ kernels: {})",
                     launch.kernel, list_or_none(defined)));
  }
  if (launch.args.size() != sig->param_sizes.size()) {
    fail(cand, key + ".args",
         fmt::format("kernel '{}' takes {} parameter{}, the plan passes {} argument{}", launch.kernel,
                     sig->param_sizes.size(), sig->param_sizes.size() == 1 ? "" : "s", launch.args.size(),
                     launch.args.size() == 1 ? "" : "s"));
  }
  for (size_t i = 0; i < launch.args.size(); ++i) {
    const PlanArg& arg = launch.args[i];
    if (arg.size_bytes() != sig->param_sizes[i]) {
      std::string kind =
          arg.is_tensor ? "a tensor pointer" : fmt::format("a {} scalar", scalar_type_name(arg.scalar_type));
      fail(cand, fmt::format("{}.args[{}]", key, i),
           fmt::format("argument '{}' of kernel '{}' is {} of {} bytes, but parameter {} is {} bytes", arg.text,
                       launch.kernel, kind, arg.size_bytes(), i, sig->param_sizes[i]));
    }
  }
}

// The names a plan may use: tensors (operator tensors, then scratch buffers) and scalars.
struct Known {
  std::vector<std::string> tensors, scalars;
};

// Checks every tensor and scalar an expression reads against the known names.
void check_expr_names(const Candidate& cand, const std::string& key, const Expr& e, const Known& known) {
  for (const auto& name : e.tensor_names()) {
    if (!contains(known.tensors, name)) {
      fail(cand, key,
           fmt::format("unknown tensor '{}' in '{}' (known tensors: {})", name, e.text(), list_or_none(known.tensors)));
    }
  }
  for (const auto& name : e.scalar_names()) {
    if (!contains(known.scalars, name)) {
      fail(cand, key,
           fmt::format("unknown scalar '{}' in '{}' (the operator's scalar arguments and the device's figures: {}; a "
                       "tensor's size is written {}.shape[i])",
                       name, e.text(), list_or_none(known.scalars), name));
    }
  }
}

void check_dims(const Candidate& cand, const std::string& key, const std::vector<Expr>& dims, const Known& known) {
  for (size_t i = 0; i < dims.size(); ++i) check_expr_names(cand, fmt::format("{}[{}]", key, i), dims[i], known);
}

void check_tensor_name(const Candidate& cand, const std::string& key, const std::string& name, const Known& known) {
  if (!name.empty() && !contains(known.tensors, name))
    fail(cand, key, fmt::format("unknown tensor '{}' (known tensors: {})", name, list_or_none(known.tensors)));
}

void check_optional_expr(const Candidate& cand, const std::string& key, const std::optional<Expr>& e,
                         const Known& known) {
  if (e) check_expr_names(cand, key, *e, known);
}

void check_gemm_names(const Candidate& cand, const std::string& key, const GemmStep& g, const Known& known) {
  const std::string k = key + ".gemm";
  for (auto [name, role] : {std::pair{&g.a, "a"}, {&g.b, "b"}, {&g.c, "c"}, {&g.d, "d"}, {&g.bias, "bias"}})
    check_tensor_name(cand, fmt::format("{}.{}", k, role), *name, known);
  for (auto [e, role] : {std::pair{&g.m, "m"}, {&g.n, "n"}, {&g.k, "k"}, {&g.batch, "batch"}})
    check_expr_names(cand, fmt::format("{}.{}", k, role), *e, known);
  for (auto [e, role] : {std::pair{&g.lda, "lda"},
                         {&g.ldb, "ldb"},
                         {&g.ldc, "ldc"},
                         {&g.ldd, "ldd"},
                         {&g.stride_a, "stride_a"},
                         {&g.stride_b, "stride_b"},
                         {&g.stride_c, "stride_c"},
                         {&g.stride_d, "stride_d"}})
    check_optional_expr(cand, fmt::format("{}.{}", k, role), *e, known);
}

void check_conv_names(const Candidate& cand, const std::string& key, const ConvStep& c, const Known& known) {
  const std::string k = key + ".conv";
  for (auto [name, role] : {std::pair{&c.x, "x"}, {&c.w, "w"}, {&c.y, "y"}, {&c.bias, "bias"}})
    check_tensor_name(cand, fmt::format("{}.{}", k, role), *name, known);
  for (auto [v, role] : {std::pair{&c.stride, "stride"},
                         {&c.padding, "padding"},
                         {&c.dilation, "dilation"},
                         {&c.output_padding, "output_padding"}})
    check_dims(cand, fmt::format("{}.{}", k, role), *v, known);
  check_expr_names(cand, k + ".groups", c.groups, known);
}

void check_launch_tensors(const Candidate& cand, size_t index, const Launch& launch, const Known& known) {
  std::string key = fmt::format("launch[{}]", index);
  if (launch.kind == StepKind::gemm) return check_gemm_names(cand, key, launch.gemm, known);
  if (launch.kind == StepKind::conv) return check_conv_names(cand, key, launch.conv, known);
  check_dims(cand, key + ".grid", launch.grid, known);
  check_dims(cand, key + ".block", launch.block, known);
  check_expr_names(cand, key + ".smem", launch.smem, known);
  for (size_t i = 0; i < launch.args.size(); ++i) {
    const PlanArg& arg = launch.args[i];
    std::string arg_key = fmt::format("{}.args[{}]", key, i);
    if (!arg.is_tensor) {
      check_expr_names(cand, arg_key, arg.value, known);
    } else if (!contains(known.tensors, arg.tensor)) {
      fail(cand, arg_key,
           fmt::format("unknown tensor '{}' (known tensors: {})", arg.tensor, list_or_none(known.tensors)));
    }
  }
}

}  // namespace

void check_plan_kernels(const Candidate& cand, const std::vector<KernelSignature>& kernels) {
  for (size_t i = 0; i < cand.plan.launches.size(); ++i)
    if (cand.plan.launches[i].kind == StepKind::kernel) check_launch_kernel(cand, i, cand.plan.launches[i], kernels);
}

void check_plan_precision(const Candidate& cand, Precision precision) {
  for (size_t i = 0; i < cand.plan.launches.size(); ++i) {
    const Launch& l = cand.plan.launches[i];
    if (l.kind == StepKind::kernel) continue;
    const std::string key = fmt::format("launch[{}].{}", i, step_kind_name(l.kind));
    try {
      check_step_precision(l.kind == StepKind::gemm ? l.gemm.compute : l.conv.compute, precision, key + ".compute");
    } catch (const StepError& e) {
      fail(cand, e.key(), e.what());
    }
  }
}

void check_plan_tensors(const Candidate& cand, const std::vector<std::string>& op_tensors,
                        const std::vector<std::string>& op_scalars) {
  // The device's figures (num_sms) are readable wherever the operator's scalars are.
  std::vector<std::string> scalars = op_scalars;
  for (const auto& name : device_constant_names())
    if (!contains(scalars, name)) scalars.push_back(name);
  Known known{op_tensors, scalars};
  for (const auto& buffer : cand.plan.scratch) {
    if (contains(op_tensors, buffer.name)) {
      fail(cand, "scratch." + buffer.name,
           fmt::format("scratch buffer '{}' has the name of an operator tensor (operator tensors: {})", buffer.name,
                       list_or_none(op_tensors)));
    }
    known.tensors.push_back(buffer.name);
  }
  // Scratch shapes are computed before any scratch buffer exists, so they may read only the
  // operator's tensors; allowing scratch names here would permit circular definitions.
  for (const auto& buffer : cand.plan.scratch) {
    check_dims(cand, fmt::format("scratch.{}.shape", buffer.name), buffer.shape, Known{op_tensors, scalars});
  }
  for (size_t i = 0; i < cand.plan.launches.size(); ++i) check_launch_tensors(cand, i, cand.plan.launches[i], known);
}

}  // namespace kagent
