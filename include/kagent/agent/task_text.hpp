#pragma once
// The values of the prompts' {{placeholders}}: prompts/task.md's from the operator, the GPU, the
// baselines and the tools; the skill's from the lists the code enforces (the headers NVRTC is
// tested with, the dtypes the plan parser accepts). Every name, number and list the model reads is
// made here from the code that decides it, so the prompts cannot drift from it.
#include <map>
#include <optional>
#include <string>

#include "kagent/agent/agent.hpp"
#include "kagent/model_tools/tool.hpp"
#include "kagent/protocol/output_rules.hpp"
#include "kagent/protocol/protocol.hpp"
#include "kagent/reference/library_times.hpp"
#include "kagent/spec/op.hpp"

namespace kagent::agent {

// What kagent knows about timing when a run starts.
struct TimingFacts {
  std::string not_measured;          // non-empty: no baselines at all, and why (no GPU, ...)
  bool native_reference = false;     // the eager baseline is the native reference, timed at the first evaluation
  std::optional<double> eager_ms;    // PyTorch eager
  std::optional<double> compile_ms;  // torch.compile, or a native op's compile_baseline_ms
  std::string compile_missing;       // why there is no torch.compile time
  double bandwidth_gbs = 0;          // for the memory floor; 0: none known
  std::string bandwidth_source;      // what bandwidth_gbs is, for the model ("this GPU's measured ... copy bandwidth")
  // The memory's theoretical bandwidth (memory clock x bus width, or the datasheet's): no kernel moves
  // bytes faster, so the floor at it is a hard bound where a measured one is only a guide. 0: unknown.
  double theoretical_gbs = 0;
  std::optional<DevicePeaks> peaks;  // this GPU's measured roofs: the compute floor and the GPU section's rates
  // A PyTorch reference's own error against fp64 per output (the server's figures on one input set),
  // stated under Correctness; nullopt where not measured or the reference has no fp64 result.
  std::optional<PrecisionFigures> reference_precision;
  // A PyTorch reference's GEMM, convolution and attention calls, each timed alone, stated under the
  // baselines: what a library step would cost for them. nullopt where not measured.
  std::optional<RefLibraryTimes> library_times;
};

// The one time that reaches tier 3. Tier 3 takes a candidate faster than eager and at most 0.95x
// torch.compile: where torch.compile is slower than eager / 0.95 (a transposed convolution it
// compiles badly), beating eager is the line that binds, not the 0.95x one.
struct Tier3Target {
  double limit_ms = 0;
  bool eager_binds = false;  // strictly under limit_ms (eager's time); otherwise at most limit_ms
  // "<= 1.8050 ms, 0.95x torch.compile's 1.9000 ms" or "under 1.2000 ms, torch eager's time (...)".
  std::string text() const;
  double compile_ms = 0;
};
// nullopt without a torch.compile time (tier 3 is out of reach then). A native reference's eager
// time is only known at the first evaluation: the target is torch.compile's line until then.
std::optional<Tier3Target> tier3_target(const TimingFacts& t);

// The baselines block: eager and torch.compile times, tier 3's bound, the memory-floor line and the
// compute-floor line.
std::string baselines_text(const Op& with_signature, const TimingFacts& t);

// Minimum bytes (every input read once, every output written once) and, with a bandwidth, the time
// floor they set, each baseline against it, and plainly when tier 3 needs a kernel at or beyond the
// copy bandwidth. "" when the tensors are not known.
std::string memory_floor_text(const Op& with_signature, const TimingFacts& t);

// The reference's own error against fp64 per output, and where the reference itself would fail the
// tolerance against fp64 (an ill-conditioned operator), what that means for a candidate's summation
// order. "" without figures.
std::string reference_error_text(const TimingFacts& t, Precision p, const Tolerance& tol);

// The operator's FLOPs (op.flops: PyTorch's FlopCounterMode, or a native op.json's count) at each of
// this GPU's measured roofs its precision allows (compute_floor.hpp), the floor they set against the
// memory floor and the baselines, and tier 3 against it. Without FLOPs, why, and the advice to work
// them out; "" when the tensors are not known.
std::string compute_floor_text(const Op& with_signature, const TimingFacts& t);

// The budget section's plan: with one turn, that the first reply is the whole run and its candidate
// the answer (nothing comes back to iterate on); otherwise a correct candidate early, then speed.
std::string budget_plan_text(const AgentOptions& budget);

// A launch plan and kernel signatures in the candidate format, written with the operator's own
// tensor and scalar names and element types.
std::string candidate_example(const Op& with_signature);

// One line per tool: its name, its arguments from its JSON schema (required first, optional ones
// marked "?"), and the first sentence of its description.
std::string tools_text(const model_tools::ToolSet& tools, const std::string& shell_note);

// "40 turns, 60 minutes" ("1 turn, 1 minute"; tokens when limited).
std::string budget_text(const AgentOptions& budget);

// The skill's placeholders: {{headers}} (compile/options.hpp's candidate_headers), {{dtypes}}
// (each plan dtype and the C type a kernel parameter points to), {{scratch_dtypes}}.
std::map<std::string, std::string> skill_values();

// Every placeholder of prompts/task.md, and skill_values' too. `op` as loaded; `with_signature` the same op with its
// tensors filled in (PyTorch references: from the reference server; may lack them without a GPU).
// `gpu` is gpu_text's line.
std::map<std::string, std::string> task_values(const Op& op, const Op& with_signature, const TimingFacts& timing,
                                               const std::string& gpu, const AgentOptions& budget,
                                               const model_tools::ToolSet& tools, const std::string& shell_note);

// The GPU line of the task: name, architecture, SMs, L2, memory, datasheet peaks of known parts.
std::string gpu_text(int index);

// A datasheet memory bandwidth (GB/s) for parts kagent knows by name, for the floor when nothing is
// measured; 0 otherwise.
double datasheet_bandwidth_gbs(const std::string& gpu_name);

}  // namespace kagent::agent
