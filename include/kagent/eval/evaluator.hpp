#pragma once
// The orchestrator side of an evaluation: compile the candidate (and the native reference and
// kagent's harness kernels), hand them to this GPU's runner, turn the outcome into a reward.
// kagent itself never creates a CUDA context.
#include <chrono>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "kagent/compile/compiler.hpp"
#include "kagent/eval/gpu_lock.hpp"
#include "kagent/eval/protocol.hpp"
#include "kagent/eval/reward.hpp"
#include "kagent/eval/runner_client.hpp"
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
  // With per_launch (the profile), for a correct candidate: this GPU's measured roofs, or why not.
  std::optional<DevicePeaks> peaks;
  std::string peaks_note;
};

class Evaluator {
 public:
  // Throws EnvError when no GPU can be used (no driver, no device).
  Evaluator(EvalOptions options, std::shared_ptr<CompileCache> cache);
  ~Evaluator();

  // Throws InputError for a bad plan (unknown kernel, wrong argument count or size, unknown
  // tensor) found before the GPU, EnvError for a missing environment. Everything about the
  // candidate itself (compile errors, faults, hangs, wrong results) is in the report.
  // With per_launch, also each launch of the plan timed on its own (the profile tool). With a
  // baseline (the previous version of the kernel), a correct, timed candidate is also compared
  // with it sample by sample in alternation (outcome.ab).
  EvalReport evaluate(const Op& op, const Candidate& cand, bool per_launch = false,
                      const Candidate* baseline = nullptr);

  const std::string& arch() const { return arch_; }

  // Evaluations end by this moment (the agent's time budget): the runner's timeout is cut to
  // what is left, at least a second. nullopt: only EvalOptions::timeout.
  void set_deadline(std::optional<std::chrono::steady_clock::time_point> deadline) { deadline_ = deadline; }

  // This GPU's copy bandwidth and FP32 matrix-product throughput: from the cache (one file per GPU
  // and driver under the compile cache's folder), else measured by the runner (about a second) and
  // cached. nullopt with *why when they cannot be measured; a failure is not retried.
  std::optional<DevicePeaks> device_peaks(std::string* why);
  RunnerClient& runner() { return *runner_; }
  RefServer* ref_server() { return ref_server_.get(); }  // nullptr until a PyTorch reference is used

  // A PyTorch reference loaded in this evaluator's reference server: the op with its signature
  // filled in (tensors and scalars as the candidate sees them) and the eager/compile baselines.
  struct PyTorchReference {
    Op op;
    RefSignature signature;
    std::optional<RefBaselines> baselines;  // measured (or read from the cache) on the first timed evaluation
  };
  // Starts the reference server on first use and loads the op's problem file (once per op and
  // precision). Throws EnvError (no python3/torch, out of memory) or InputError (problem errors).
  const PyTorchReference& pytorch_reference(const Op& op);
  // Its eager and torch.compile baselines, measured now (or read from the cache) if not yet.
  const RefBaselines& pytorch_baselines(const Op& op);

 private:
  std::string write_cubin(const CompileResult& r);
  // This GPU to ourselves for one measurement (gpu_lock.hpp), saying so when it has to wait.
  GpuLock lock_gpu(const std::string& what) const;
  void measure_torch_baselines();
  std::string harness_cubin();

  EvalOptions opt_;
  std::optional<std::chrono::steady_clock::time_point> deadline_;
  std::string arch_;
  Compiler compiler_;
  std::unique_ptr<RunnerClient> runner_;
  std::filesystem::path work_dir_;   // cubins handed to the runner; removed at destruction
  std::filesystem::path cache_dir_;  // the compile cache's folder: the peaks are cached beside it
  std::string gpu_uuid_;
  int driver_version_ = 0;
  std::optional<DevicePeaks> peaks_;
  std::string peaks_error_;
  // A native reference's timing is a baseline: measured once per (reference, shapes, arch) in
  // this process, not again for every candidate.
  std::map<std::string, TimingSummary> reference_times_;
  std::unique_ptr<RefServer> ref_server_;  // started for the first PyTorch reference
  std::string loaded_key_;                 // which op the server holds
  PyTorchReference loaded_;
};

// Text for people: compile line, verdict, mismatch, timing table, bandwidth, flags, reward.
std::string render_report(const EvalReport& r);
nlohmann::json report_json(const EvalReport& r);

}  // namespace kagent
