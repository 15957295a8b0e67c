#pragma once
// The typed, versioned messages between kagent and kagent-runner besides the request itself
// (protocol.hpp): the reply to "evaluate" and "peaks", and the trial exchange in the middle of an
// evaluation of a PyTorch reference. child_client.hpp has the framing (ids, JSON lines); both
// sides read and write these structs only, so the JSON has one definition. Each message carries
// "version"; a reader refuses one it does not know (a stale kagent-runner beside a new kagent).
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "kagent/protocol/output_rules.hpp"
#include "kagent/protocol/protocol.hpp"

namespace kagent {

// Bump when a message below changes shape.
inline constexpr int kRunnerMessageVersion = 1;

// One plan of a "library_steps" request timed (LibraryStepsRequest): the median, or why not.
struct LibraryStepTime {
  std::optional<double> median_ms;  // nullopt: not timed (`error` says why)
  int samples = 0;
  std::string step;   // what ran: "cuBLASLt gemm 128x64x256 f32 (IEEE fp32), epilogue bias"
  std::string error;  // the plan or the library refused it, or it failed
};

// The runner's reply to "evaluate", "peaks" and "library_steps": {"id": N, "version": 1, "ok": bool, ...}.
struct RunnerResult {
  int version = kRunnerMessageVersion;
  bool ok = false;
  std::string error;                   // why not ok
  bool environment = false;            // the error is the environment's (no GPU, no driver): kagent exits 3
  bool restart = false;                // a sticky CUDA error: the runner exits after this reply
  std::optional<EvalOutcome> outcome;  // "evaluate", when ok
  std::optional<DevicePeaks> peaks;    // "peaks", when ok
  std::optional<std::vector<LibraryStepTime>> step_times;  // "library_steps", when ok: one per plan
};

// What the runner can ask kagent for in the middle of a request. Written by name.
enum class RunnerNeed { trial };

// The runner -> kagent: a PyTorch reference's trial t under `seed` (the reference server makes
// its inputs and outputs). {"id": N, "need": "trial", "version": 1, "trial": t, "seed": s}
struct TrialNeed {
  int version = kRunnerMessageVersion;
  RunnerNeed need = RunnerNeed::trial;
  int trial = 0;
  uint64_t seed = 0;
};

// kagent -> the runner: the trial's tensors (inputs, then outputs, by name) shared by CUDA IPC,
// or why not. {"id": N, "version": 1, "tensors": [...], "fp64_note": "..."} or {..., "error": "..."}
struct TrialAnswer {
  int version = kRunnerMessageVersion;
  std::vector<IpcTensorRef> tensors;
  std::string fp64_note;  // why no fp64 reference was sent ("" when one was, or not said)
  // The reference at the precisions the problem forbids, against fp64 (output_rules.hpp), where
  // the server measured them: {"precision_figures": {...}}.
  std::optional<PrecisionFigures> precision_figures;
  std::string error;  // non-empty: the reference server failed; no tensors
};

// kagent -> the runner: {"cmd": "compare", "version": 1, ...}: a ModelNew solution's outputs (and
// its input tensors after the call) against a PyTorch reference's trial, both shared by CUDA IPC:
// the comparison runs here, out of the solution's process. The reply is a RunnerResult whose
// outcome holds correct, errors, flags (on the first check), mismatch and message; failure stage
// "inputs" when an input changed, "correctness" when an output differs.
struct CompareRequest {
  int version = kRunnerMessageVersion;
  int gpu = 0;
  std::string harness_cubin_path;
  Tolerance tolerance;
  std::vector<TensorSpec> inputs, outputs;  // the forward's tensors and the outputs, by name
  std::vector<IpcTensorRef> reference;      // the server's trial: inputs, outputs, "NAME@f64" twins
  std::vector<IpcTensorRef> candidate;      // the worker's: outputs and inputs, by the same names
  int trial = 0;
  std::string when = "correctness";
  bool first_check = false;                           // flag a reference that cannot tell right from wrong
  std::optional<PrecisionFigures> precision_figures;  // the server's, for the precision rule
};

// kagent -> the runner: {"cmd": "copy", "version": 1, "gpu": N, "from": [...], "to": [...]}: each
// tensor of `from` copied into the tensor of the same name in `to`, both shared by CUDA IPC (the
// reference server's trial inputs into a ModelNew worker's input buffers). Each jailed child has a
// pid namespace of its own, and legacy CUDA IPC handles open across a parent and a child pid
// namespace but not across two sibling ones: so the runner, in kagent's, moves the tensors
// between them. The reply is a RunnerResult without an outcome (ok, or the error).
struct CopyRequest {
  int version = kRunnerMessageVersion;
  int gpu = 0;
  std::vector<IpcTensorRef> from, to;
};

// kagent -> the runner: {"cmd": "library_steps", "version": 1, "gpu": N, ...}: each plan (a whole
// launch plan, one gemm or conv step on scratch buffers of fixed shapes: what a reference's library
// call is as kagent's own step) run and timed alone by the baselines' protocol: L2 flushed before
// each sample, CUDA events, the median under `stop_rule`. Scratch is filled with uniform values in
// (-1, 1). With `tf32`, the steps compute as the reference's calls do when its precision allows TF32.
// The reply is a RunnerResult with step_times, one per plan in order.
struct LibraryStepsRequest {
  int version = kRunnerMessageVersion;
  int gpu = 0;
  std::string harness_cubin_path;
  bool tf32 = false;
  StopRule stop_rule;
  std::vector<nlohmann::json> plans;
};

// The readers throw EnvError for another version (naming the message and both versions) and
// nlohmann's errors for missing fields.
void to_json(nlohmann::json& j, const RunnerResult& r);
void from_json(const nlohmann::json& j, RunnerResult& r);
void to_json(nlohmann::json& j, RunnerNeed n);
void from_json(const nlohmann::json& j, RunnerNeed& n);
void to_json(nlohmann::json& j, const TrialNeed& n);
void from_json(const nlohmann::json& j, TrialNeed& n);
void to_json(nlohmann::json& j, const TrialAnswer& a);
void from_json(const nlohmann::json& j, TrialAnswer& a);
void to_json(nlohmann::json& j, const CompareRequest& r);
void from_json(const nlohmann::json& j, CompareRequest& r);
void to_json(nlohmann::json& j, const CopyRequest& r);
void from_json(const nlohmann::json& j, CopyRequest& r);
void to_json(nlohmann::json& j, const LibraryStepTime& t);
void from_json(const nlohmann::json& j, LibraryStepTime& t);
void to_json(nlohmann::json& j, const LibraryStepsRequest& r);
void from_json(const nlohmann::json& j, LibraryStepsRequest& r);

}  // namespace kagent
