#pragma once
// Checks of a launch plan against things outside the candidate file: the operator's tensor names
// and the compiled kernels' parameter lists. Used offline by `kagent compile` (parameters from the
// cubin) and by the runner (parameters from cuFuncGetParamInfo).
#include <cstdint>
#include <string>
#include <vector>

#include "kagent/spec/candidate.hpp"

namespace kagent {

struct KernelSignature {
  std::string name;
  std::vector<uint32_t> param_sizes;  // bytes, in parameter order
};

// Every kernel a launch names exists (library steps name none), and its argument count and sizes match the parameters.
// Throws InputError naming the candidate, the launch index, the kernel and the argument.
void check_plan_kernels(const Candidate& cand, const std::vector<KernelSignature>& kernels);

enum class Precision;

// Library steps ask for TF32 only where the run's precision allows it (never under fp32).
// Throws InputError naming the step's compute key.
void check_plan_precision(const Candidate& cand, Precision precision);

// Every tensor a plan refers to (as an argument or inside an expression) is an operator tensor
// or a scratch buffer, no scratch buffer shadows an operator tensor, and every bare name in an
// expression is one of the operator's scalar arguments.
void check_plan_tensors(const Candidate& cand, const std::vector<std::string>& op_tensors,
                        const std::vector<std::string>& op_scalars = {});

}  // namespace kagent
