#include "kagent/spec/plan_check.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "kagent/common/error.hpp"
#include "kagent/spec/device_constants.hpp"

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

void check_launch_tensors(const Candidate& cand, size_t index, const Launch& launch, const Known& known) {
  std::string key = fmt::format("launch[{}]", index);
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
  for (size_t i = 0; i < cand.plan.launches.size(); ++i) check_launch_kernel(cand, i, cand.plan.launches[i], kernels);
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
