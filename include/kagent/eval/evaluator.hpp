#pragma once
// The orchestrator side of an evaluation: compile the candidate (and the native reference and
// kagent's harness kernels), hand them to this GPU's runner, turn the outcome into a reward. What
// differs between kinds of candidate (a plan, a ModelNew solution) is the kind's
// (candidate_kind.hpp); the steps they share are evaluate()'s.
// kagent itself never creates a CUDA context. The GPU is lazy: an Evaluator compiles on any
// machine; the first call that needs the GPU finds it and starts the runner, and throws EnvError
// there when there is none. So a caller has one Evaluator for compiling and for evaluating.
#include <chrono>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>

#include "kagent/compile/compiler.hpp"
#include "kagent/eval/ahead.hpp"
#include "kagent/eval/baselines_file.hpp"
#include "kagent/eval/candidate_kinds.hpp"
#include "kagent/eval/gpu_lock.hpp"
#include "kagent/eval/reward.hpp"
#include "kagent/eval/warm_problems.hpp"
#include "kagent/protocol/child_client.hpp"
#include "kagent/protocol/protocol.hpp"
#include "kagent/protocol/torch_ops.hpp"
#include "kagent/reference/ref_server.hpp"
#include "kagent/spec/op.hpp"

namespace kagent {

struct EvalOptions {
  int gpu = 0;
  std::string arch;  // empty: the GPU's
  int trials = 0;    // 0: the op's correctness_trials
  bool timing = true;
  std::chrono::milliseconds timeout{60000};  // wall-clock limit for one evaluation on the GPU
  StopRule stop_rule;
  MeasureKnobs knobs;              // warm-up, re-check cadence, CUPTI and per-launch sample counts
  std::string runner_path;         // empty: kagent-runner beside kagent, or $KAGENT_RUNNER
  bool refresh_baselines = false;  // PyTorch references: re-measure eager and compile
  AbRule ab_rule;                  // A/B comparisons against a baseline kernel (kagent check)
  bool cupti_check = true;         // after timing, check it against CUPTI's kernel records
  bool refresh_peaks = false;      // re-measure the GPU's peaks instead of reading the cache
  bool guard_checks = true;        // guard bands and seals (off only to measure their cost)
  // ModelNew solutions: what PyTorch's own operators doing the work earns (protocol/torch_ops.hpp):
  // fail (tier -1), cap (tier 1: the torch_ops flag withholds the speed tiers) or allow.
  TorchOps torch_ops = TorchOps::cap;
  // PyTorch references: eager and torch.compile times from this shared file (--baselines) instead of
  // measured here; null: measured (or this machine's cache).
  std::shared_ptr<const BaselinesFile> baselines;
};

struct EvalReport {
  std::string candidate;  // path
  std::string op;         // name
  std::string arch;
  Precision precision = Precision::fp32;  // what correctness was judged under
  Tolerance tolerance;
  CompileResult compile;
  bool ran = false;  // the runner produced an outcome
  EvalOutcome outcome;
  Baselines baselines;
  Reward reward;
  std::string sandbox_warning;
  bool reference_time_cached = false;  // the reference was timed by an earlier evaluation
  std::optional<RefBaselines> torch;   // PyTorch references: the server's eager/compile timings
  std::string baseline_error;          // a baseline kernel was given but does not compile (its log)
  // With EvalMode::profile, for a correct candidate: this GPU's measured roofs, or why not.
  std::optional<DevicePeaks> peaks;
  std::string peaks_note;
  // PyTorch references: how this evaluation found its problem (WarmProblems::Use::state: "current",
  // "warm", "started_ahead", "started") and the seconds it waited for it to be ready.
  std::string problem_state;
  double problem_wait_s = 0;
};

// What an evaluation measures besides correctness and the plan's time (EvalOptions::timing).
enum class EvalMode {
  score,    // the verdict and reward: kagent eval, the evaluate tool, bench, check
  profile,  // also each launch timed on its own, hardware counters and this GPU's peaks (profile)
};

// An operator as candidates see it, resolved once (Evaluator::resolve): for a PyTorch reference,
// its problem file loaded in the evaluator's reference server and the signature filled in
// (tensors and scalars as the candidate sees them); a native operator as it is.
struct ResolvedOp {
  Op op;
};

class EvalContext;  // candidate_kind.hpp

class Evaluator {
 public:
  // Touches no GPU and starts nothing.
  Evaluator(EvalOptions options, std::shared_ptr<CompileCache> cache);
  ~Evaluator();

  // Why this machine cannot evaluate ("no GPU to evaluate on: ..."), "" when it can. Asks the
  // driver once; starts nothing. Throws InputError for a GPU index the machine does not have, or
  // (with a GPU) an --arch this NVRTC does not know.
  const std::string& gpu_problem();
  // The compile target: EvalOptions::arch, else the GPU's, else (no GPU) kNoGpuArch.
  const std::string& arch();
  // Compiles the candidate at arch() and checks its plan against the op (InputError for a bad
  // plan): works without a GPU. A kind built only when it is evaluated (ModelNew) compiles nothing
  // here: ok, with a note saying so.
  CompileResult compile(const Candidate& cand, const Op& op);

  // The op as candidates see it. A PyTorch reference needs the GPU: starts the reference server
  // on first use and loads the problem file (once per op and precision). Throws EnvError (no
  // GPU, no python3/torch, out of memory) or InputError (problem errors).
  ResolvedOp resolve(const Op& op);

  // Needs the GPU (EnvError without one, with gpu_problem()'s message). Throws InputError for a
  // bad plan (unknown kernel, wrong argument count or size, unknown tensor) found before the GPU.
  // Everything about the candidate itself (compile errors, faults, hangs, wrong results) is in the
  // report. With a baseline (the previous version of the kernel, of the same kind), a correct, timed
  // candidate is also compared with it sample by sample in alternation (outcome.ab).
  // The steps every kind shares are here; the kind's own are its KindEvaluation (candidate_kind.hpp).
  EvalReport evaluate(const ResolvedOp& op, const Candidate& cand, EvalMode mode = EvalMode::score,
                      const Candidate* baseline = nullptr);
  // evaluate(resolve(op), ...), for callers that need nothing else of the resolved op.
  EvalReport evaluate(const Op& op, const Candidate& cand, EvalMode mode = EvalMode::score,
                      const Candidate* baseline = nullptr);

  // The problems this evaluator keeps warm, shared with the evaluators made after it on the same GPU
  // (EvaluatorBackend makes one per set of options). Without one it keeps a single problem.
  void set_warm_problems(std::shared_ptr<WarmProblems> warm) { warm_ = std::move(warm); }
  WarmProblems& warm_problems();

  // Evaluations end by this moment (the agent's time budget): the runner's timeout is cut to
  // what is left, at least a second. nullopt: only EvalOptions::timeout.
  void set_deadline(std::optional<std::chrono::steady_clock::time_point> deadline) { deadline_ = deadline; }

  // This GPU's copy bandwidth and FP32 matrix-product throughput: from the cache (one file per GPU
  // and driver under the compile cache's folder), else measured by the runner (about a second) and
  // cached. nullopt with *why when they cannot be measured; a failure is not retried. Needs the
  // GPU (EnvError without one).
  std::optional<DevicePeaks> device_peaks(std::string* why);
  // A hint from a front end that knows what comes next: `cand` is likely the next candidate evaluated
  // against `op`. What its kind can start before its turn (CandidateKind::start_ahead) starts now on
  // the evaluator's helper thread, beside whatever this thread measures; its evaluation takes it. A
  // PyTorch problem that is not warm is started ahead too (WarmProblems::start_ahead).
  // Never throws; does nothing without a GPU.
  // `count`: how many evaluations of this very candidate are likely next (a repeated source: one
  // worker each).
  void expect(const Op& op, const Candidate& cand, size_t count = 1);
  // The problem alone (a PyTorch one not warm: started ahead on the pool's helper thread), with
  // its baselines under this evaluator's stop rule when `with_baselines`. Never throws.
  void expect_problem(const Op& op, bool with_baselines);
  ChildClient& runner();    // needs the GPU (EnvError without one)
  RefServer* ref_server();  // the current PyTorch problem's server; nullptr until one is used

  // A resolved PyTorch reference's eager and torch.compile baselines, measured now (or read from
  // the cache) if not yet.
  const RefBaselines& pytorch_baselines(const ResolvedOp& op);
  // A resolved PyTorch reference's precision figures (output_rules.hpp: each output's own error
  // against fp64, and the precisions the problem forbids), from one trial on fresh inputs the first
  // time; nullopt where the reference has no fp64 twin. For the task's text: no candidate sees them.
  const std::optional<PrecisionFigures>& reference_precision(const ResolvedOp& op);
  // A resolved PyTorch reference's GEMM, convolution and attention calls, each timed alone
  // (library_times.hpp), measured under the GPU lock the first time (or read from the cache). For
  // the task's text: the choice between a library step and a kernel of one's own.
  const RefLibraryTimes& library_times(const ResolvedOp& op);
  // Each call of `t` that has a plan step (RefLibraryCall::plan) and a PyTorch time gets kagent's own
  // step timed alone by the runner (step_ms, step, or step_error), with TF32 where `tf32` (the
  // reference's numerics). Cached per GPU, driver, kagent version and plans under the compile
  // cache's folder; --refresh-baselines measures again. A runner failure is each call's step_error,
  // not an exception. Needs the GPU (EnvError without one).
  void time_library_steps(RefLibraryTimes& t, bool tf32);

 private:
  friend class EvalContext;  // a kind's view of the evaluator's means
  const PyTorchReference& pytorch_reference(const Op& op);
  // Finds the GPU (once): its arch, UUID and driver, or why there is none (gpu_problem_).
  void probe();
  // probe(), then EnvError without a GPU; starts the runner's client and work folder once.
  void require_gpu();
  // EvalOptions::timeout, cut to what the deadline leaves now (at least a second).
  std::chrono::milliseconds timeout_left() const;
  std::string write_cubin(const CompileResult& r);
  // This GPU to ourselves for one measurement (gpu_lock.hpp), saying so when it has to wait.
  GpuLock lock_gpu(const std::string& what) const;
  void measure_torch_baselines();
  // The loaded reference's eager and torch.compile times into the report's baselines.
  void note_torch_baselines(EvalReport& rep) const;
  // An out-of-memory failure is the candidate's only when no other process held the GPU's
  // memory; otherwise it throws GpuBusyError (out_of_memory.cpp).
  void settle_out_of_memory(EvalReport& rep) const;
  // One try of evaluate(): the report with an out-of-memory failure not yet settled.
  EvalReport evaluate_once(const ResolvedOp& op, const Candidate& cand, EvalMode mode, const Candidate* baseline);
  std::filesystem::path gpu_lock_file() const;
  // After an out-of-memory failure: lets the idle problems kept warm go (false when there were none).
  bool let_idle_problems_go(const std::string& why, const Candidate& cand);
  std::string harness_cubin();

  EvalOptions opt_;
  std::optional<std::chrono::steady_clock::time_point> deadline_;
  bool probed_ = false;
  std::string gpu_problem_;  // after probe(): "" with a GPU
  std::string arch_;
  Compiler compiler_;
  std::unique_ptr<ChildClient> runner_;  // made by require_gpu()
  std::filesystem::path work_dir_;       // cubins handed to the runner; removed at destruction
  std::filesystem::path cache_dir_;      // the compile cache's folder: the peaks are cached beside it
  std::string gpu_uuid_;
  int driver_version_ = 0;
  std::optional<DevicePeaks> peaks_;
  std::string peaks_error_;
  // A native reference's timing is a baseline: measured once per (reference, shapes, arch) in
  // this process, not again for every candidate.
  std::map<std::string, TimingSummary> reference_times_;
  int64_t gpu_memory_ = 0;
  std::unique_ptr<AheadSlot> ahead_;  // made by the first expect()
  std::shared_ptr<WarmProblems> warm_;
  PyTorchReference* loaded_ = nullptr;  // the current problem's, in warm_
  // How the last switch of problem found it (WarmProblems::Use), for the next evaluation's report.
  std::string switch_state_;
  double switch_wait_s_ = 0;
  std::set<std::string> refreshed_;  // problems whose baselines --refresh-baselines measured again
};

// What names a candidate's work started ahead (Evaluator::expect, EvalContext::take_ahead): its
// kind, file, text and problem file.
std::string ahead_key(const Candidate& cand, const Op& op);

// Text for people: compile line, verdict, mismatch, timing table, bandwidth, flags, reward.
std::string render_report(const EvalReport& r);
nlohmann::json report_json(const EvalReport& r);

}  // namespace kagent
