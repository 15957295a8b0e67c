#pragma once
// The tools that touch kernels: compile, evaluate, profile, finish. They read candidates from the
// workspace and report what kagent's compiler and evaluator say, in text the model can act on.
//   compile  {path}           NVRTC: the resource table, or the errors with the file's line numbers
//   evaluate {path}           correctness, timing, speedups, tier (the reward); needs a GPU
//   profile  {path}           one evaluation with each launch also timed on its own; per launch:
//                             grid, block, registers, shared memory, occupancy, time and share;
//                             for the plan: time, achieved bandwidth against peak, memory floor
//   finish   {path, summary?} ends the run, naming the final candidate
#include <functional>
#include <map>
#include <optional>
#include <string>

#include "kagent/compile/compiler.hpp"
#include "kagent/eval/evaluator.hpp"
#include "kagent/model_tools/tool.hpp"
#include "kagent/model_tools/workspace.hpp"
#include "kagent/spec/op.hpp"

namespace kagent::model_tools {

struct KernelToolContext {
  Op op;  // the signature filled in (PyTorch references: from the server)
  Compiler* compiler = nullptr;
  std::string arch;
  // Evaluates a candidate against `op` by the mode's protocol, cut off at the deadline when one is
  // given: an Evaluator of this process (`kagent optimize`) or the service's GPU queue (a session of
  // `kagent serve`). Throws InputError for a plan that does not fit the op, EnvError when it cannot
  // evaluate. Empty: no GPU; evaluate and profile say why (no_gpu_reason).
  using Evaluate =
      std::function<EvalReport(const Candidate& candidate, EvalMode mode, std::optional<Deadline> deadline)>;
  Evaluate evaluate;
  std::string no_gpu_reason;
  // The one candidate kind the tools take (eval/candidate_kinds.hpp: "plan", "modelnew"); "" any.
  std::string kind;
  // Called after every evaluation (the run keeps candidates/NNN.cu or .py and best.cu or best.py).
  std::function<void(const std::string& path, const std::string& source, const EvalReport& report)> on_evaluated;
  // Set by finish: the final candidate and the model's summary.
  std::optional<std::string> finished_path;
  std::string finish_summary;
  std::map<std::string, EvalReport> last_report;  // by workspace path: the latest evaluation
};

ToolSet make_kernel_tools(const Workspace& ws, KernelToolContext& ctx);

}  // namespace kagent::model_tools
