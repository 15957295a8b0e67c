#pragma once
// What a ModelNew solution's use of PyTorch's operators earns under a policy
// (protocol/torch_ops.hpp), read from the profiled samples (tools/kagent_modelnew/trace.py: the
// outermost aten:: operator around each kernel launched during the solution's call, and how many
// kernels were the solution's own). Apart from the evaluation so that CI tests it on recorded traces.
#include <string>

#include <nlohmann/json.hpp>

#include "kagent/protocol/protocol.hpp"
#include "kagent/protocol/torch_ops.hpp"

namespace kagent {

// cap's line: PyTorch's kernels carrying more than half the kernel time make the torch_ops flag.
inline constexpr double kTorchShareLimit = 0.5;

// Adds to o.flags what the trace shows: a note that PyTorch's operators ran (allow, or cap under
// the line), or the torch_ops flag (cap over it, or no kernel of the solution's own: tier 1). Under
// fail, when an operator that computes ran a kernel or no kernel of the solution's own ran: the
// torch_ops flag and the returned failure message (the evaluation fails at stage torch_ops once
// its checks are done); "" otherwise. `c` is the cross-check read from the same trace (its kernel
// time gives the shares).
std::string judge_torch_ops(const nlohmann::json& trace, const CuptiCheck& c, TorchOps policy, EvalOutcome& o);

}  // namespace kagent
