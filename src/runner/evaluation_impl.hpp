#pragma once
// The inside of one evaluation (evaluation.hpp has the entry point). Class Evaluation holds what
// every measurement shares, and each measurement mode is a few of its member functions in a file
// of its own, as nvbench splits measure_cold / measure_hot / measure_cupti:
//
//   evaluation.cpp           shared state: buffers, inputs (made here or imported from the
//                            reference server), prepare_sample, the write checks, and run(), the
//                            modes in order
//   measure_correctness.cpp  the trials, output matching, the re-checks, degenerate/weak reference
//   measure_timing.cpp       time_plan, timed_sample, the stopping rule, bandwidth and memory floor
//   measure_launches.cpp     time_launches: each launch of the plan timed on its own
//   measure_counters.cpp     collect_metrics: hardware counters (CUPTI range profiler)
//   measure_cupti.cpp        cupti_check: CUPTI's kernel records against the events' span
//   measure_ab.cpp           compare_ab, blame_ab_damage: the candidate against a baseline kernel
//
// Every mode measures through prepare_sample (or timed_sample, which calls it), so the modes
// cannot drift apart in what precedes a measured execution.
#include <chrono>
#include <initializer_list>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "bounds_check.hpp"
#include "cupti_activity.hpp"
#include "evaluation.hpp"
#include "plan_executor.hpp"

namespace kagent::runner {

using Clock = std::chrono::steady_clock;

struct Events {
  Event begin_;         // before restore/poison/flush: the sample's whole GPU busy time
  Event start_, stop_;  // around the plan: the timed span
};

// The reference server could not produce a trial, or a native reference wrote outside its
// buffers (the message says which).
class ReferenceFailure : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The candidate wrote outside the buffers it was given (failure stage "bounds").
class BoundsViolation : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The candidate wrote one of its inputs while it was timed (failure stage "inputs"): its timed runs
// share one copy of the inputs, so a kernel that wrote them would be timed on other data.
class InputsWritten : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

inline std::vector<CUdeviceptr> pointers(const std::vector<GuardedBuffer>& bufs) {
  std::vector<CUdeviceptr> out;
  for (const auto& b : bufs) out.push_back(b.get());
  return out;
}

inline Buffers guarded(const std::vector<GuardedBuffer>& bufs) {
  Buffers out;
  for (const auto& b : bufs) out.push_back(&b);
  return out;
}

inline Buffers join(std::initializer_list<Buffers> parts) {
  Buffers out;
  for (const auto& p : parts) out.insert(out.end(), p.begin(), p.end());
  return out;
}

// Whether a CUPTI kernel record is one of the plan's launches (measure_cupti.cpp says how).
bool plan_launch(const KernelRecord& r, uint32_t ctx_id, uint32_t stream_id);

class Evaluation {
 public:
  Evaluation(const Device& dev, Harness& h, const EvalRequest& rq, const AskKagent& ask,
             std::vector<GuardedBuffer>* kept);
  ~Evaluation();  // leaves the buffers in `kept`
  EvaluationResult run();

 private:
  // --- evaluation.cpp: shared state ---
  void allocate();
  void new_inputs(int trial);
  // PyTorch references: trial t's tensors from the server; its inputs copied into pristine_.
  void import_trial(int trial);
  std::vector<IpcTensorRef> refs_of(const std::vector<TensorSpec>& specs) const;
  // The server's fp64 twins of the outputs ("NAME@f64", numel doubles), for the outputs that have one.
  std::vector<IpcTensorRef> fp64_refs_of(const std::vector<TensorSpec>& specs) const;
  void restore_inputs();
  void poison(const std::vector<GuardedBuffer>& bufs);
  TensorMap tensors(const std::vector<GuardedBuffer>& outs) const;
  // Every guarded buffer of the evaluation (plus `extra`, a baseline's scratch): a stray store may
  // land near any of them, so every check looks at all of them.
  Buffers all_buffers(const Buffers& extra = {}) const;
  // Writes outside the buffers since the last check: a damaged guard band or a sealed buffer that
  // changed, as the message naming `who` and `when`; nullopt when there were none.
  std::optional<std::string> stray_writes(const std::string& who, const std::string& when, const Buffers& extra = {});
  // After a run of the candidate (BoundsViolation) or of a native reference (ReferenceFailure).
  void check_candidate_writes(const std::string& when);
  void check_reference_writes(const std::string& when);
  // What precedes every measured execution of a plan (timed samples, the A/B and CUPTI samples,
  // per-launch timing, the counters' replay), written once so the modes cannot drift apart: L2
  // persisting lines reset, then (queued on the stream, after `begin` when given) inputs restored
  // (unless `restore` is false: the candidate's timed samples, whose inputs are sealed instead),
  // outputs and scratch poisoned, L2 flushed.
  void prepare_sample(PlanExecutor& plan, const std::vector<GuardedBuffer>& outs, CUevent begin = nullptr,
                      bool restore = true);

  // --- measure_correctness.cpp ---
  // The trials: fresh inputs (or the server's), the reference (native: run here), the candidate,
  // its outputs compared; false (o.failure_stage set) on the first trial that fails.
  bool run_trials(PlanExecutor& cand_plan, PlanExecutor* ref_plan, EvalOutcome& o);
  // Compares the candidate's outputs with the server's (and its fp64 twins, where it sent them),
  // mapped just for this; keeps a copy of them in ref_out_ (and ref64_out_ where that fits) when
  // `keep` (the re-checks during timing compare against that copy).
  bool match_server_outputs(int trial, const std::string& when, bool keep, EvalOutcome& o);
  // The outputs again after a timed sample: against the runner's copies, or, when an fp64 twin
  // exists that the runner could not copy, against the server's own tensors.
  bool recheck_outputs(const std::string& when, EvalOutcome& o);
  // The re-checks during timing queued on the stream right after a group's last sample, with the
  // next group queued behind them, and read when the host gets there (measure_timing.cpp): each
  // output against the runner's copy of the reference and its fp64 twin in one pass, the verdict
  // recheck_outputs gives. Not where a twin stayed in the server (fp64_not_copied_): those wait.
  bool rechecks_can_queue() const { return !fp64_not_copied_; }
  // Groups of samples (each with its queued re-check) in flight at once during timing: the one the
  // host reads and two queued behind it, so the GPU does not idle while the host wakes up from a
  // group's events, reads its re-check and queues the next.
  static constexpr size_t kGroupSlots = 3;
  void enqueue_recheck(size_t slot);
  bool read_recheck(size_t slot, const std::string& when, EvalOutcome& o);
  // Compares candidate outputs with reference outputs; fills the mismatch report and returns false
  // on the first tensor that fails.
  // reference64: per output the fp64 reference, or 0 (none).
  bool outputs_match(int trial, const std::string& when, EvalOutcome& o, const std::vector<CUdeviceptr>& reference,
                     const std::vector<CUdeviceptr>& reference64);

  // --- measure_timing.cpp ---
  // The reference's time (native references), then the candidate's with its outputs re-checked
  // during and after; false (o.correct and o.failure_stage set) when a re-check failed.
  bool measure_times(PlanExecutor& cand_plan, PlanExecutor* ref_plan, EvalOutcome& o);
  TimingSummary time_plan(PlanExecutor& plan, const std::vector<GuardedBuffer>& outs, const std::string& label,
                          bool recheck, EvalOutcome& o, bool& recheck_failed);
  // One timed sample: prepare_sample, all of it queued before the start event, then the plan,
  // then the stop event. enqueue_sample queues it; read_sample waits for its stop event and reads
  // its times, so that several samples can be queued back to back and waited for once.
  struct Sample {
    double plan_ms;  // the timed span
    double busy_ms;  // everything the GPU did for this sample (warm-up counts this)
  };
  void enqueue_sample(PlanExecutor& plan, const std::vector<GuardedBuffer>& outs, Events& ev, const std::string& label,
                      bool restore);
  Sample read_sample(Events& ev, const std::string& label);
  double elapsed_ms(CUevent from, CUevent to) const;  // by the two events, both recorded and complete
  // enqueue_sample (inputs restored) and read_sample: the A/B and CUPTI passes' one sample at a time.
  Sample timed_sample(PlanExecutor& plan, const std::vector<GuardedBuffer>& outs, Events& ev, const std::string& label);
  // Bytes moved, achieved bandwidth, the memory floor and its flag, from the candidate's median.
  void note_bandwidth(EvalOutcome& o) const;

  // --- measure_launches.cpp ---
  // Each launch timed on its own: the sample's set-up as in time_plan, then an event between
  // launches; medians over a fixed number of samples (a breakdown, not the verdict's timing).
  std::vector<LaunchTime> time_launches(PlanExecutor& plan, int samples);

  // --- measure_counters.cpp ---
  // Hardware counters for each launch of one execution of the plan (CUPTI range profiler).
  void collect_metrics(PlanExecutor& plan, EvalOutcome& o);

  // --- measure_cupti.cpp ---
  // A few more timed samples with CUPTI's kernel records alongside: the plan's launches all seen,
  // on the plan's stream and context, nothing else launched, and the events' span covering them.
  CuptiCheck cupti_check(PlanExecutor& plan);

  // --- measure_ab.cpp ---
  // The candidate against the request's baseline kernel, sample by sample in alternation.
  AbComparison compare_ab(PlanExecutor& cand_plan);
  // After the A/B samples found a damaged band: the candidate alone once more on fresh bands, to
  // tell whose store it was (BoundsViolation when the candidate's; else the baseline's, in `ab`).
  void blame_ab_damage(PlanExecutor& cand_plan, const Buffers& base_scratch, const GuardDamage& d, AbComparison& ab);

  const Device& dev_;
  Harness& h_;
  const EvalRequest& rq_;
  const AskKagent& ask_;
  std::vector<GuardedBuffer>* kept_;  // the runner's buffers between evaluations (null: none)
  BoundsCheck bounds_;
  // Inputs as the plans see them, the runner's pristine copies, the reference's and the
  // candidate's outputs; the plans' scratch is in the PlanExecutors.
  std::vector<GuardedBuffer> in_, pristine_, ref_out_, cand_out_;
  Buffers plan_scratch_;  // the candidate's and a native reference's
  // The fp64 twins of ref_out_ (kept with it for the re-checks); empty buffers where there is none.
  std::vector<DeviceBuffer> ref64_out_;
  bool fp64_not_copied_ = false;  // a twin exists but did not fit in the runner's memory
  std::string fp64_note_;         // the server's word on why a trial has no fp64 twin
  // The server's figures at the forbidden precisions (the precision rule), where it sent them.
  std::optional<PrecisionFigures> figures_;
  const PrecisionFigures* figures() const { return figures_ ? &*figures_ : nullptr; }
  DeviceBuffer flush_;
  std::vector<IpcTensorRef> trial_refs_;  // the server's tensors for the current trial
  // kGroupSlots slots of queued re-checks (a compare slot per output each), their copy on the host
  // and the event after each slot's copy; made on the first queued re-check.
  DeviceBuffer recheck_stats_;
  HostBuffer recheck_host_;
  std::vector<Event> recheck_done_;
  Event span_begin_;  // before a timing pass's first sample: the sampling phase's GPU span
};

}  // namespace kagent::runner
