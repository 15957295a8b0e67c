#pragma once
// The one question every front end of many candidates asks (`kagent eval` with several candidates,
// `kagent bench --samples`, `kagent serve`): evaluate this candidate against this problem on this
// worker's GPU, and answer with `kagent eval --json`'s record. Behind it today: an Evaluator per
// worker (evaluator_backend.hpp); a backend that keeps a problem warm across candidates drops in
// behind the same interface, and the front ends do not change.
#include <chrono>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "kagent/common/error.hpp"
#include "kagent/eval/evaluator.hpp"
#include "kagent/eval/warm_limits.hpp"
#include "kagent/protocol/stats.hpp"
#include "kagent/spec/candidate.hpp"
#include "kagent/spec/op.hpp"
#include "kagent/spec/op_overrides.hpp"

namespace kagent::judge {

// One candidate and how to judge it: what `kagent eval`'s arguments and flags say.
struct CandidateRequest {
  // The candidate: a file that holds it (`kagent eval`, bench), read from there and named as given;
  // or, with `file` empty, its text (`kagent serve`), written where the backend's children read it.
  std::filesystem::path file;
  std::string source;
  // With `source`: its kind's name (CandidateKind::name: "plan", "modelnew"); a file's kind is its
  // name's (eval/candidate_kinds.hpp).
  std::string kind = "plan";
  std::string name;                    // the record's "candidate" (default: the file, or "candidate.cu"/".py")
  std::filesystem::path problem;       // op.json or KernelBench .py
  std::optional<Precision> precision;  // nullopt: the op's
  OpOverrides overrides;               // atol, rtol
  int trials = 0;                      // 0: the op's correctness_trials
  bool timing = true;
  std::chrono::milliseconds timeout{60000};  // the GPU part's wall-clock limit (`kagent eval --timeout`)
  StopRule stop_rule;
  MeasureKnobs knobs;
  TorchOps torch_ops = TorchOps::cap;  // ModelNew solutions (protocol/torch_ops.hpp); kagent serve's: fail
  std::string arch;                    // "": the GPU's
  bool refresh_baselines = false;
  std::shared_ptr<const BaselinesFile> baselines;  // --baselines: shared eager/compile times (null: measured)
  // The report itself besides the record (EvalBackend::evaluate_report): the sessions of `kagent
  // serve` render it for the model as `kagent optimize`'s tools do. `mode` is its protocol
  // (EvalMode::profile: also each launch timed on its own, counters and this GPU's roofs).
  bool want_report = false;
  EvalMode mode = EvalMode::score;
};

// The key a problem is kept warm under (EvalBackend::warm, the schedulers' affinity): its file,
// absolute and normal. A PyTorch problem's reference server serves one file, at any precision.
std::string problem_key(const std::filesystem::path& problem);

// What a backend holds ready between requests (EvalBackend::warm): its pool's figures with its
// limits, what a scheduler reads to prefer requests whose problem is warm on a worker (`problems`,
// `current`, as problem_key gives them), and what /health and /metrics report.
struct WarmState : WarmStats {
  size_t limit = 0;         // the most problems kept at once (0: this backend keeps none)
  double memory_share = 0;  // of the GPU's memory (and the host's), what idle problems may hold
};

// Evaluates candidates on one GPU. Made and used by one thread (the runner a backend starts is
// tied to the thread that started it), one request at a time.
class EvalBackend {
 public:
  virtual ~EvalBackend() = default;
  // Why this backend cannot evaluate ("no GPU to evaluate on: ..."), "" when it can. Starts nothing.
  virtual std::string unavailable() = 0;
  // `kagent eval --json`'s record. The candidate's own failures (compile errors, faults, hangs,
  // wrong results, a plan block that does not parse) are in the record, with tier -1. Throws
  // InputError for the problem (or a plan that does not fit it), EnvError for the environment (no
  // GPU, no python3/torch; GpuBusyError when another process held the GPU's memory).
  virtual nlohmann::json evaluate(const CandidateRequest& request) = 0;
  // The same evaluation by request.mode's protocol, as the report itself (record_of_report makes
  // its record). Throws as evaluate() does, and InputError for a candidate that does not parse. A
  // backend without reports throws EnvError.
  virtual EvalReport evaluate_report(const CandidateRequest& request);
  // The Evaluator this backend would judge `request` with, made if need be; nullptr for a backend
  // without one. For work on the worker's GPU besides evaluations (EvalQueue::run_task).
  virtual Evaluator* evaluator_for_request(const CandidateRequest& request) {
    (void)request;
    return nullptr;
  }
  // A hint from a front end that knows what comes next: `next` are likely the requests evaluate()
  // gets after the one it gets now, in order (at most kExpectAhead are worth giving). Called before
  // that one, so that what their kinds can start ahead starts beside its measurement
  // (Evaluator::expect). Never throws.
  virtual void expect(const std::vector<CandidateRequest>& next) { (void)next; }
  // What it holds warm now. Called by the thread that calls evaluate(), between requests.
  virtual WarmState warm() { return {}; }
};

// A candidate text that does not parse (its plan block): the candidate's own failure, which
// EvalBackend::evaluate records with tier -1 and evaluate_report throws.
class CandidateParseError : public InputError {
 public:
  using InputError::InputError;
};

// `kagent eval --json`'s record of a report, named as the request names its candidate.
nlohmann::json record_of_report(const EvalReport& report, const CandidateRequest& request);

// How many upcoming requests a front end announces (EvalBackend::expect): as many as the evaluator
// starts at once (AheadSlot::kThreads).
constexpr size_t kExpectAhead = 4;

// A backend for the worker of one GPU, made in that worker's thread.
using BackendFactory = std::function<std::unique_ptr<EvalBackend>(int gpu)>;

}  // namespace kagent::judge
