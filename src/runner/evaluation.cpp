#include "evaluation.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <initializer_list>
#include <map>
#include <memory>

#include <fmt/format.h>

#include "bounds_check.hpp"
#include "cupti_activity.hpp"
#include "ipc_import.hpp"
#include "kagent/common/files.hpp"
#include "kagent/eval/reference_quality.hpp"
#include "kagent/profile/counters.hpp"
#include "plan_executor.hpp"
#include "range_profiler.hpp"

namespace kagent::runner {

namespace {

using Clock = std::chrono::steady_clock;

uint64_t splitmix64(uint64_t z) {
  z += 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

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

std::vector<CUdeviceptr> pointers(const std::vector<GuardedBuffer>& bufs) {
  std::vector<CUdeviceptr> out;
  for (const auto& b : bufs) out.push_back(b.get());
  return out;
}

Buffers guarded(const std::vector<GuardedBuffer>& bufs) {
  Buffers out;
  for (const auto& b : bufs) out.push_back(&b);
  return out;
}

Buffers join(std::initializer_list<Buffers> parts) {
  Buffers out;
  for (const auto& p : parts) out.insert(out.end(), p.begin(), p.end());
  return out;
}

class Evaluation {
 public:
  Evaluation(const Device& dev, Harness& h, const EvalRequest& rq, const AskKagent& ask)
      : dev_(dev),
        h_(h),
        rq_(rq),
        ask_(ask),
        bounds_(dev, h, splitmix64(rq.seed ^ 0x5EA1ED6A4DB4A9D5ull), rq.guard_checks) {}
  EvaluationResult run();

 private:
  void allocate();
  void new_inputs(int trial);
  // PyTorch references: trial t's tensors from the server; its inputs copied into pristine_.
  void import_trial(int trial);
  // Compares the candidate's outputs with the server's (and its fp64 twins, where it sent them),
  // mapped just for this; keeps a copy of them in ref_out_ (and ref64_out_ where that fits) when
  // `keep` (the re-checks during timing compare against that copy).
  bool match_server_outputs(int trial, const std::string& when, bool keep, EvalOutcome& o);
  std::vector<IpcTensorRef> refs_of(const std::vector<TensorSpec>& specs) const;
  // The server's fp64 twins of the outputs ("NAME@f64", numel doubles), for the outputs that have one.
  std::vector<IpcTensorRef> fp64_refs_of(const std::vector<TensorSpec>& specs) const;
  // The outputs again after a timed sample: against the runner's copies, or, when an fp64 twin
  // exists that the runner could not copy, against the server's own tensors.
  bool recheck_outputs(const std::string& when, EvalOutcome& o);
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
  // Compares candidate outputs with reference outputs; fills the mismatch report and returns false
  // on the first tensor that fails.
  // reference64: per output the fp64 reference, or 0 (none).
  bool outputs_match(int trial, const std::string& when, EvalOutcome& o, const std::vector<CUdeviceptr>& reference,
                     const std::vector<CUdeviceptr>& reference64);
  void flag_degenerate(const TensorSpec& t, const CompareResult& c, EvalOutcome& o);
  // The largest errors seen for output i, over every check (EvalOutcome::errors).
  void note_errors(size_t i, const CompareResult& c, bool first_check, EvalOutcome& o);
  // Each launch timed on its own: the sample's set-up as in time_plan, then an event between
  // launches; medians over a fixed number of samples (a breakdown, not the verdict's timing).
  std::vector<LaunchTime> time_launches(PlanExecutor& plan, int samples);
  TimingSummary time_plan(PlanExecutor& plan, const std::vector<GuardedBuffer>& outs, const std::string& label,
                          bool recheck, EvalOutcome& o, bool& recheck_failed);
  // What precedes every measured execution of a plan (timed samples, the A/B and CUPTI samples,
  // per-launch timing, the counters' replay), written once so the modes cannot drift apart: L2
  // persisting lines reset, then (queued on the stream, after `begin` when given) inputs restored,
  // outputs and scratch poisoned, L2 flushed.
  void prepare_sample(PlanExecutor& plan, const std::vector<GuardedBuffer>& outs, CUevent begin = nullptr);
  // One timed sample: prepare_sample, all of it queued before the start event, then the plan,
  // then the stop event.
  struct Sample {
    double plan_ms;  // the timed span
    double busy_ms;  // everything the GPU did for this sample (warm-up counts this)
  };
  Sample timed_sample(PlanExecutor& plan, const std::vector<GuardedBuffer>& outs, Events& ev, const std::string& label);
  // The candidate against the request's baseline kernel, sample by sample in alternation.
  AbComparison compare_ab(PlanExecutor& cand_plan);
  // After the A/B samples found a damaged band: the candidate alone once more on fresh bands, to
  // tell whose store it was (BoundsViolation when the candidate's; else the baseline's, in `ab`).
  void blame_ab_damage(PlanExecutor& cand_plan, const Buffers& base_scratch, const GuardDamage& d, AbComparison& ab);
  // A few more timed samples with CUPTI's kernel records alongside: the plan's launches all seen,
  // on the plan's stream and context, nothing else launched, and the events' span covering them.
  CuptiCheck cupti_check(PlanExecutor& plan);
  // Hardware counters for each launch of one execution of the plan (CUPTI range profiler).
  void collect_metrics(PlanExecutor& plan, EvalOutcome& o);

  const Device& dev_;
  Harness& h_;
  const EvalRequest& rq_;
  const AskKagent& ask_;
  BoundsCheck bounds_;
  // Inputs as the plans see them, the runner's pristine copies, the reference's and the
  // candidate's outputs; the plans' scratch is in the PlanExecutors.
  std::vector<GuardedBuffer> in_, pristine_, ref_out_, cand_out_;
  Buffers plan_scratch_;  // the candidate's and a native reference's
  // The fp64 twins of ref_out_ (kept with it for the re-checks); empty buffers where there is none.
  std::vector<DeviceBuffer> ref64_out_;
  bool fp64_not_copied_ = false;  // a twin exists but did not fit in the runner's memory
  std::string fp64_note_;         // the server's word on why a trial has no fp64 twin
  DeviceBuffer flush_;
  std::vector<IpcTensorRef> trial_refs_;  // the server's tensors for the current trial
};

TensorMap Evaluation::tensors(const std::vector<GuardedBuffer>& outs) const {
  TensorMap m;
  for (size_t i = 0; i < rq_.inputs.size(); ++i)
    m[rq_.inputs[i].name] = {rq_.inputs[i].shape, rq_.inputs[i].dtype, in_[i].get(), in_[i].bytes()};
  for (size_t i = 0; i < rq_.outputs.size(); ++i)
    m[rq_.outputs[i].name] = {rq_.outputs[i].shape, rq_.outputs[i].dtype, outs[i].get(), outs[i].bytes()};
  return m;
}

void Evaluation::allocate() {
  for (const auto& t : rq_.inputs) {
    in_.emplace_back(static_cast<size_t>(t.bytes()), "input", t.name);
    pristine_.emplace_back(static_cast<size_t>(t.bytes()), "the harness's copy of input", t.name);
  }
  for (const auto& t : rq_.outputs) {
    ref_out_.emplace_back(static_cast<size_t>(t.bytes()), "the reference output", t.name);
    cand_out_.emplace_back(static_cast<size_t>(t.bytes()), "output", t.name);
  }
  // Twice the L2, read before every timed sample, so no sample starts with a warm cache (or with
  // dirty lines to write back). Its contents do not matter; it is zeroed once so it is defined.
  flush_ = DeviceBuffer(static_cast<size_t>(std::max<int64_t>(dev_.summary().l2_bytes, 1 << 20) * 2));
  check(cu().cuMemsetD8Async(flush_.get(), 0, flush_.bytes(), dev_.stream()), "clear flush buffer");
}

void Evaluation::new_inputs(int trial) {
  const uint64_t trial_seed = splitmix64(rq_.seed + 0x632BE59BD9B4E019ull * static_cast<uint64_t>(trial + 1));
  for (size_t i = 0; i < rq_.inputs.size(); ++i) {
    const TensorSpec& t = rq_.inputs[i];
    h_.fill(in_[i].get(), t.numel(), t.dtype, t.init, splitmix64(trial_seed + i));
    check(cu().cuMemcpyDtoDAsync(pristine_[i].get(), in_[i].get(), in_[i].bytes(), dev_.stream()), "copy inputs");
  }
}

void Evaluation::import_trial(int trial) {
  phase(fmt::format("trial {}: waiting for the reference server", trial));
  const uint64_t trial_seed = splitmix64(rq_.seed + 0x632BE59BD9B4E019ull * static_cast<uint64_t>(trial + 1));
  TrialNeed need;
  need.trial = trial;
  need.seed = trial_seed;
  TrialAnswer answer = ask_(need);
  if (!answer.error.empty()) throw ReferenceFailure(answer.error);
  trial_refs_ = std::move(answer.tensors);
  if (!answer.fp64_note.empty()) fp64_note_ = answer.fp64_note;
  phase(fmt::format("trial {}: importing the reference inputs", trial));
  IpcImport imp(refs_of(rq_.inputs));
  for (size_t i = 0; i < rq_.inputs.size(); ++i)
    check(cu().cuMemcpyDtoDAsync(pristine_[i].get(), imp.ptr(rq_.inputs[i].name), pristine_[i].bytes(), dev_.stream()),
          "copy reference inputs");
  dev_.sync();  // before the mappings close
}

std::vector<IpcTensorRef> Evaluation::refs_of(const std::vector<TensorSpec>& specs) const {
  std::vector<IpcTensorRef> out;
  for (const auto& t : specs) {
    auto it =
        std::find_if(trial_refs_.begin(), trial_refs_.end(), [&](const IpcTensorRef& r) { return r.name == t.name; });
    if (it == trial_refs_.end())
      throw ReferenceFailure(fmt::format("the reference server sent no tensor '{}'", t.name));
    if (it->bytes != static_cast<uint64_t>(t.bytes()))
      throw ReferenceFailure(fmt::format("the reference server's tensor '{}' has {} bytes, the signature says {}",
                                         t.name, it->bytes, t.bytes()));
    out.push_back(*it);
  }
  return out;
}

std::vector<IpcTensorRef> Evaluation::fp64_refs_of(const std::vector<TensorSpec>& specs) const {
  std::vector<IpcTensorRef> out;
  for (const auto& t : specs) {
    const std::string name = t.name + "@f64";
    auto it =
        std::find_if(trial_refs_.begin(), trial_refs_.end(), [&](const IpcTensorRef& r) { return r.name == name; });
    if (it == trial_refs_.end()) continue;
    if (it->bytes != static_cast<uint64_t>(t.numel()) * 8)
      throw ReferenceFailure(fmt::format("the reference server's fp64 tensor '{}' has {} bytes, expected {}", name,
                                         it->bytes, t.numel() * 8));
    out.push_back(*it);
  }
  return out;
}

bool Evaluation::match_server_outputs(int trial, const std::string& when, bool keep, EvalOutcome& o) {
  std::vector<IpcTensorRef> refs = refs_of(rq_.outputs), refs64 = fp64_refs_of(rq_.outputs);
  refs.insert(refs.end(), refs64.begin(), refs64.end());
  IpcImport imp(refs);  // one import: a tensor and its twin may share an allocation's handle
  std::vector<CUdeviceptr> server, server64;
  for (const auto& t : rq_.outputs) {
    server.push_back(imp.ptr(t.name));
    const bool has =
        std::any_of(refs64.begin(), refs64.end(), [&](const auto& r) { return r.name == t.name + "@f64"; });
    server64.push_back(has ? imp.ptr(t.name + "@f64") : 0);
  }
  bool ok = outputs_match(trial, when, o, server, server64);
  if (ok && keep) {
    for (size_t i = 0; i < server.size(); ++i)
      check(cu().cuMemcpyDtoDAsync(ref_out_[i].get(), server[i], ref_out_[i].bytes(), dev_.stream()),
            "copy reference outputs");
    // The twins too, for the re-checks, where they fit (with 1 GiB to spare for the timing).
    ref64_out_.clear();
    ref64_out_.resize(server64.size());
    fp64_not_copied_ = false;
    for (size_t i = 0; i < server64.size(); ++i) {
      if (server64[i] == 0) continue;
      const size_t bytes = static_cast<size_t>(rq_.outputs[i].numel()) * 8;
      size_t free = 0, total = 0;
      check(cu().cuMemGetInfo(&free, &total), "cuMemGetInfo");
      if (free < bytes + (size_t(1) << 30)) {
        fp64_not_copied_ = true;
        continue;
      }
      ref64_out_[i] = DeviceBuffer(bytes);
      check(cu().cuMemcpyDtoDAsync(ref64_out_[i].get(), server64[i], bytes, dev_.stream()), "copy fp64 reference");
    }
  }
  dev_.sync();  // before the mappings close
  if (ok && keep) bounds_.seal(guarded(ref_out_));
  return ok;
}

bool Evaluation::recheck_outputs(const std::string& when, EvalOutcome& o) {
  if (fp64_not_copied_) return match_server_outputs(rq_.trials - 1, when, false, o);
  std::vector<CUdeviceptr> ref64(rq_.outputs.size(), 0);
  for (size_t i = 0; i < ref64_out_.size() && i < ref64.size(); ++i) ref64[i] = ref64_out_[i].get();
  return outputs_match(rq_.trials - 1, when, o, pointers(ref_out_), ref64);
}

void Evaluation::restore_inputs() {
  for (size_t i = 0; i < in_.size(); ++i)
    check(cu().cuMemcpyDtoDAsync(in_[i].get(), pristine_[i].get(), in_[i].bytes(), dev_.stream()), "restore inputs");
}

void Evaluation::poison(const std::vector<GuardedBuffer>& bufs) {
  // 0xFF bytes: NaN in every float format, -1 in integers; an element never written fails.
  for (const auto& b : bufs) check(cu().cuMemsetD8Async(b.get(), 0xFF, b.bytes(), dev_.stream()), "poison outputs");
}

Buffers Evaluation::all_buffers(const Buffers& extra) const {
  // The plan's own buffers first: a damaged band there is the likeliest and the most telling.
  return join({guarded(in_), guarded(cand_out_), plan_scratch_, guarded(ref_out_), guarded(pristine_), extra});
}

std::optional<std::string> Evaluation::stray_writes(const std::string& who, const std::string& when,
                                                    const Buffers& extra) {
  if (auto d = bounds_.damaged(all_buffers(extra))) return guard_damage_message(who, *d, when);
  if (const GuardedBuffer* b = bounds_.changed()) return private_write_message(who, b->kind(), b->name(), when);
  return std::nullopt;
}

void Evaluation::check_candidate_writes(const std::string& when) {
  if (auto m = stray_writes("candidate", when)) throw BoundsViolation(*m);
}

void Evaluation::check_reference_writes(const std::string& when) {
  if (auto m = stray_writes("reference " + rq_.reference.name, when)) throw ReferenceFailure(*m);
}

void Evaluation::flag_degenerate(const TensorSpec& t, const CompareResult& c, EvalOutcome& o) {
  // A reference that is all (near) zero or constant cannot tell a correct kernel from an empty one.
  if (c.ref_max_abs <= 1e-6) {
    o.flags.push_back(fmt::format("degenerate reference: output '{}' is all (near) zero (max |ref| = {:.3g})", t.name,
                                  c.ref_max_abs));
    return;
  }
  if (c.ref_min == c.ref_max) {
    o.flags.push_back(fmt::format("degenerate reference: output '{}' is constant ({:.6g})", t.name, c.ref_min));
    return;
  }
  // Weaker, but as telling: on most elements, or on all within the tolerance, it cannot either.
  if (auto why = weak_reference(static_cast<uint64_t>(t.numel()), c.ref_zeros, c.ref_min, c.ref_max, c.ref_min_abs,
                                rq_.tolerance))
    o.flags.push_back(fmt::format("weak reference: output '{}' {}", t.name, *why));
}

void Evaluation::note_errors(size_t i, const CompareResult& c, bool first_check, EvalOutcome& o) {
  if (o.errors.size() <= i) o.errors.resize(rq_.outputs.size());
  OutputErrors& e = o.errors[i];
  e.tensor = rq_.outputs[i].name;
  e.max_abs = std::max(e.max_abs, c.max_abs);
  if (c.has_fp64) {
    e.max_abs_fp64 = std::max(e.max_abs_fp64.value_or(0.0), c.max_abs_fp64);
    e.ref_error_fp64 = std::max(e.ref_error_fp64.value_or(0.0), c.ref_error_fp64);
    e.passed_by_fp64 = std::max(e.passed_by_fp64, c.passed_by_fp64);
  }
  if (first_check && rq_.outputs[i].numel() > 0)
    e.zero_share = static_cast<double>(c.ref_zeros) / static_cast<double>(rq_.outputs[i].numel());
}

bool Evaluation::outputs_match(int trial, const std::string& when, EvalOutcome& o,
                               const std::vector<CUdeviceptr>& reference, const std::vector<CUdeviceptr>& reference64) {
  if (!fp64_note_.empty()) o.fp64_note = fp64_note_;
  for (size_t i = 0; i < rq_.outputs.size(); ++i) {
    const TensorSpec& t = rq_.outputs[i];
    const CUdeviceptr ref64 = i < reference64.size() ? reference64[i] : 0;
    CompareResult c = h_.compare(cand_out_[i].get(), reference[i], t.numel(), t.dtype, rq_.tolerance, ref64);
    const bool first_check = trial == 0 && when == "correctness";
    if (first_check) flag_degenerate(t, c, o);
    note_errors(i, c, first_check, o);
    if (c.mismatches == 0) continue;
    MismatchReport m;
    m.tensor = t.name;
    m.trial = trial;
    m.when = when;
    m.first_index = c.first_bad;
    m.candidate_value = h_.read(cand_out_[i].get(), static_cast<int64_t>(c.first_bad), t.dtype);
    m.reference_value = h_.read(reference[i], static_cast<int64_t>(c.first_bad), t.dtype);
    m.count = c.mismatches;
    m.nan_count = c.nan_mismatches;
    m.numel = static_cast<uint64_t>(t.numel());
    m.max_abs = c.max_abs;
    m.max_rel = c.max_rel;
    std::string fp64_text;
    if (c.has_fp64) {
      m.reference_fp64_value = h_.read(ref64, static_cast<int64_t>(c.first_bad), DType::f64);
      m.max_abs_fp64 = c.max_abs_fp64;
      m.ref_error_fp64 = c.ref_error_fp64;
      fp64_text = fmt::format(
          "; against the fp64 reference ({:.8g} there): max abs error {:.3g}, the reference's own {:.3g} (an element "
          "within the tolerance of fp64, or no farther from it than the reference, passes)",
          *m.reference_fp64_value, c.max_abs_fp64, c.ref_error_fp64);
    }
    o.mismatch = m;
    o.message = fmt::format(
        "output '{}' differs from the reference ({}, trial {}): {} of {} elements outside atol={:g} rtol={:g} "
        "({} NaN/Inf mismatches); first at index {}: candidate {:.8g}, reference {:.8g}; max abs error {:.3g}, "
        "max rel error {:.3g}{}",
        t.name, when, trial, m.count, m.numel, rq_.tolerance.atol, rq_.tolerance.rtol, m.nan_count, m.first_index,
        m.candidate_value, m.reference_value, m.max_abs, m.max_rel, fp64_text);
    return false;
  }
  return true;
}

TimingSummary Evaluation::time_plan(PlanExecutor& plan, const std::vector<GuardedBuffer>& outs,
                                    const std::string& label, bool recheck, EvalOutcome& o, bool& recheck_failed) {
  Events ev;
  const auto wall0 = Clock::now();
  auto wall_s = [&] { return std::chrono::duration<double>(Clock::now() - wall0).count(); };

  auto sample = [&]() { return timed_sample(plan, outs, ev, label); };

  // Warm-up is about clocks ramping up: what counts is how long the GPU has been busy (restores,
  // flushes and the plan), not the plan's share of it.
  phase(label + ": warm-up");
  int runs = 0;
  double warm_ms = 0;
  while (!warmup_done(runs, warm_ms, rq_.knobs) && wall_s() < rq_.stop_rule.max_wall_s) {
    warm_ms += sample().busy_ms;
    ++runs;
  }
  phase(label + ": sampling");
  std::vector<double> samples;
  StopDecision d;
  while (!d.stop) {
    samples.push_back(sample().plan_ms);
    // Outputs checked right after the stop event: deferred or racy work cannot hide.
    if (recheck && samples.size() % static_cast<size_t>(std::max(1, rq_.knobs.check_every)) == 0) {
      ++o.rechecks;
      if (!recheck_outputs(fmt::format("re-check after timing sample {}", samples.size()), o)) {
        recheck_failed = true;
        break;
      }
    }
    d = should_stop(samples, wall_s(), rq_.stop_rule);
  }
  if (recheck && !recheck_failed) {
    ++o.rechecks;
    if (!recheck_outputs("re-check after timing", o)) recheck_failed = true;
  }
  TimingSummary s = summarize(samples);
  s.stop_reason = recheck_failed ? "outputs wrong during timing" : d.reason;
  return s;
}

void Evaluation::prepare_sample(PlanExecutor& plan, const std::vector<GuardedBuffer>& outs, CUevent begin) {
  check(cu().cuCtxResetPersistingL2Cache(), "cuCtxResetPersistingL2Cache");
  if (begin != nullptr) check(cu().cuEventRecord(begin, dev_.stream()), "cuEventRecord");
  restore_inputs();
  poison(outs);
  plan.poison_scratch();
  h_.flush(flush_.get(), flush_.bytes());
}

Evaluation::Sample Evaluation::timed_sample(PlanExecutor& plan, const std::vector<GuardedBuffer>& outs, Events& ev,
                                            const std::string& label) {
  prepare_sample(plan, outs, ev.begin_.get());
  check(cu().cuEventRecord(ev.start_.get(), dev_.stream()), "cuEventRecord");
  plan.run(false, label);
  check(cu().cuEventRecord(ev.stop_.get(), dev_.stream()), "cuEventRecord");
  check(cu().cuEventSynchronize(ev.stop_.get()), label);
  float plan_ms = 0, busy_ms = 0;
  check(cu().cuEventElapsedTime(&plan_ms, ev.start_.get(), ev.stop_.get()), "cuEventElapsedTime");
  check(cu().cuEventElapsedTime(&busy_ms, ev.begin_.get(), ev.stop_.get()), "cuEventElapsedTime");
  return {plan_ms, busy_ms};
}

AbComparison Evaluation::compare_ab(PlanExecutor& cand_plan) {
  const PlanSource& src = *rq_.baseline;
  phase("A/B: loading the baseline " + src.name);
  Candidate base = parse_candidate(src.source, src.name);
  Module base_mod(read_text_file(src.cubin_path));
  // The baseline writes the candidate's output buffers: the two never run at the same time.
  PlanExecutor base_plan(dev_, base_mod, base, tensors(cand_out_), rq_.scalars, "baseline " + src.name);
  const Buffers base_scratch = base_plan.scratch();
  bounds_.fill(base_scratch);
  AbComparison ab;
  // A baseline that computes something else would make its time meaningless: say so.
  restore_inputs();
  poison(cand_out_);
  base_plan.poison_scratch();
  base_plan.run(true, "baseline on the last trial's inputs");
  if (auto d = bounds_.damaged(all_buffers(base_scratch))) {
    ab.baseline_message = guard_damage_message("baseline " + src.name, *d, "its run on the last trial's inputs");
    bounds_.fill(all_buffers(base_scratch));  // fresh bands, so the samples below are checked too
  } else if (const GuardedBuffer* b = bounds_.changed()) {
    // The harness's own copies are spoilt; the candidate's results stand (every pass before was
    // checked), but nothing more can be measured against them.
    ab.baseline_message =
        private_write_message("baseline " + src.name, b->kind(), b->name(), "its run on the last trial's inputs");
    return ab;
  } else {
    EvalOutcome scratch;
    ab.baseline_correct = recheck_outputs("baseline", scratch);
    if (!ab.baseline_correct)
      ab.baseline_message =
          scratch.mismatch ? fmt::format("{} differs from the reference ({} of {} elements)", scratch.mismatch->tensor,
                                         scratch.mismatch->count, scratch.mismatch->numel)
                           : scratch.message;
  }

  Events ev;
  const auto wall0 = Clock::now();
  auto wall_s = [&] { return std::chrono::duration<double>(Clock::now() - wall0).count(); };
  std::vector<double> a, b;  // candidate, baseline
  phase("A/B: warm-up");
  for (int i = 0; i < 4; ++i) {
    timed_sample(cand_plan, cand_out_, ev, "A/B warm-up");
    timed_sample(base_plan, cand_out_, ev, "A/B warm-up");
  }
  phase("A/B: sampling");
  StopDecision d;
  for (int pair = 0; !d.stop; ++pair) {
    // A B, then B A: neither side always runs first (right after the other's L2 flush pattern).
    if (pair % 2 == 0) {
      a.push_back(timed_sample(cand_plan, cand_out_, ev, "A/B candidate").plan_ms);
      b.push_back(timed_sample(base_plan, cand_out_, ev, "A/B baseline").plan_ms);
    } else {
      b.push_back(timed_sample(base_plan, cand_out_, ev, "A/B baseline").plan_ms);
      a.push_back(timed_sample(cand_plan, cand_out_, ev, "A/B candidate").plan_ms);
    }
    ab.ratio = paired_ratio(a, b);
    d = ab_should_stop(ab.ratio, wall_s(), rq_.ab_rule);
  }
  ab.stop_reason = d.reason;
  ab.candidate_ms = summarize(a).median_ms;
  ab.baseline_ms = summarize(b).median_ms;
  if (auto damage = bounds_.damaged(all_buffers(base_scratch))) blame_ab_damage(cand_plan, base_scratch, *damage, ab);
  if (const GuardedBuffer* changed = bounds_.changed())
    throw BoundsViolation(private_write_message("the candidate or its baseline " + src.name, changed->kind(),
                                                changed->name(), "the A/B timing"));
  return ab;
}

void Evaluation::blame_ab_damage(PlanExecutor& cand_plan, const Buffers& base_scratch, const GuardDamage& d,
                                 AbComparison& ab) {
  bounds_.fill(all_buffers(base_scratch));
  restore_inputs();
  poison(cand_out_);
  cand_plan.poison_scratch();
  cand_plan.run(true, "candidate alone after the A/B timing");
  if (auto m = stray_writes("candidate", "the A/B timing and a run of its own after it", base_scratch))
    throw BoundsViolation(*m);
  ab.baseline_correct = false;
  ab.baseline_message = guard_damage_message("baseline " + rq_.baseline->name, d, "the A/B timing");
}

namespace {

// Whether a CUPTI kernel record is one of the plan's launches: launched from the host on the
// runner's stream and context, and not one of kagent's own harness kernels (restore, poison, L2
// flush run on that stream too). Not by the plan's kernel names: CUPTI remembers a name per
// function handle, and a candidate's module unloaded while recording was off (between
// evaluations) can leave its name on the handle of the next module loaded at the same address;
// seen on the H100, where a vector add was reported under the name of the FMA chain evaluated two
// candidates before it. The harness module stays loaded, so its names are right.
bool plan_launch(const KernelRecord& r, uint32_t ctx_id, uint32_t stream_id) {
  return !r.device_launched && r.context_id == ctx_id && r.stream_id == stream_id && !r.name.starts_with("kagent_");
}

}  // namespace

CuptiCheck Evaluation::cupti_check(PlanExecutor& plan) {
  CuptiCheck c;
  KernelActivity* act = KernelActivity::get(&c.not_run);
  if (!act) return c;
  phase("CUPTI cross-check");
  const int kSamples = std::max(1, rq_.knobs.cupti_samples);
  Events ev;
  try {
    act->start();  // refused when another profiler (Nsight Compute, say) holds CUPTI
  } catch (const std::exception& e) {
    c.not_run = e.what();
    return c;
  }
  try {
    for (int k = 0; k < kSamples; ++k) c.event_ms += timed_sample(plan, cand_out_, ev, "CUPTI cross-check").plan_ms;
  } catch (...) {
    act->stop();
    throw;
  }
  const std::vector<KernelRecord> recs = act->stop();
  c.ran = true;
  c.samples = kSamples;
  c.launches_expected = kSamples * static_cast<int>(plan.launch_count());
  const uint32_t ctx_id = act->context_id(dev_.context());
  const uint32_t stream_id = act->stream_id(dev_.context(), dev_.stream());
  std::vector<double> per_launch;     // the plan's kernels in start order
  std::map<std::string, int> others;  // kernels outside the plan, by name, for the message
  for (const auto& r : recs) {
    if (plan_launch(r, ctx_id, stream_id)) {
      ++c.launches_seen;
      c.kernel_ms += r.ms();
      per_launch.push_back(r.ms());
    } else if (r.device_launched) {
      ++c.other_kernels;
      ++others[r.name.empty() ? std::string("(no name)") : r.name];
    } else if (r.context_id != ctx_id || r.stream_id != stream_id) {
      ++c.off_stream;
    }
  }
  if (c.launches_seen == c.launches_expected) {
    // Consecutive launch_count records make one sample (one stream: the samples do not overlap).
    std::vector<double> per_sample(kSamples, 0.0);
    for (size_t i = 0; i < per_launch.size(); ++i) per_sample[i / plan.launch_count()] += per_launch[i];
    c.kernel_median_ms = summarize(per_sample).median_ms;
  }
  std::vector<std::string> problems;
  if (c.launches_seen != c.launches_expected)
    problems.push_back(fmt::format("CUPTI saw {} launches of the plan's kernels in {} samples, expected {}",
                                   c.launches_seen, kSamples, c.launches_expected));
  if (c.other_kernels > 0) {
    std::string names;
    for (const auto& [name, n] : others) names += fmt::format("{}{} x{}", names.empty() ? "" : ", ", name, n);
    problems.push_back(
        fmt::format("{} kernel(s) ran that the plan does not launch (device-launched: {})", c.other_kernels, names));
  }
  if (c.off_stream > 0)
    problems.push_back(fmt::format("{} kernel(s) ran outside the runner's stream and context", c.off_stream));
  // Kernels on one stream run one after another inside the timed span: it cannot be shorter than
  // their sum (2% and 2 us per launch of slack for the two clocks' granularity).
  const double slack = 0.02 * c.kernel_ms + 0.002 * c.launches_seen;
  if (c.event_ms + slack < c.kernel_ms)
    problems.push_back(
        fmt::format("the timed span ({:.4f} ms over {} samples) is shorter than the kernels CUPTI saw "
                    "({:.4f} ms): the timing does not cover the work",
                    c.event_ms, kSamples, c.kernel_ms));
  for (const auto& p : problems) c.problem += (c.problem.empty() ? "" : "; ") + p;
  return c;
}

void Evaluation::collect_metrics(PlanExecutor& plan, EvalOutcome& o) {
  phase("hardware counters");
  try {
    auto ranges = profile_ranges(
        dev_.context(), rq_.gpu, profile::counter_metrics(),
        [&] {  // as before every timed sample; the flush finishes before profiling starts
          prepare_sample(plan, cand_out_);
          check(cu().cuCtxSynchronize(), "hardware counters: set-up");
        },
        [&] {
          plan.run(false, "hardware counters");
          check(cu().cuCtxSynchronize(), "hardware counters");
        });
    if (ranges.size() != plan.launch_count()) {
      o.metrics_note = fmt::format("the range profiler reported {} kernels for a plan of {} launches", ranges.size(),
                                   plan.launch_count());
      return;
    }
    // Auto ranges are numbered in launch order: range i is launch i.
    for (size_t i = 0; i < ranges.size(); ++i) {
      o.metrics.push_back(profile::kernel_metrics(plan.kernel_of(i), ranges[i].values));
    }
  } catch (const CudaError&) {
    throw;  // the candidate faulted during the replay: the usual path for CUDA errors
  } catch (const std::exception& e) {
    o.metrics.clear();
    o.metrics_note = e.what();
  }
}

std::vector<LaunchTime> Evaluation::time_launches(PlanExecutor& plan, int samples) {
  phase("timing each launch");
  const size_t n = plan.launch_count();
  std::vector<Event> ev(n + 1);
  std::vector<std::vector<double>> times(n);
  std::string no_cupti;
  KernelActivity* act = rq_.cupti_check ? KernelActivity::get(&no_cupti) : nullptr;
  if (act) {
    try {
      act->start();
    } catch (const std::exception&) {
      act = nullptr;  // the breakdown then has the events' times only
    }
  }
  try {
    for (int s = 0; s < samples; ++s) {
      prepare_sample(plan, cand_out_);
      for (size_t i = 0; i < n; ++i) {
        check(cu().cuEventRecord(ev[i].get(), dev_.stream()), "cuEventRecord");
        plan.launch(i, "per-launch timing");
      }
      check(cu().cuEventRecord(ev[n].get(), dev_.stream()), "cuEventRecord");
      check(cu().cuEventSynchronize(ev[n].get()), "per-launch timing");
      for (size_t i = 0; i < n; ++i) {
        float ms = 0;
        check(cu().cuEventElapsedTime(&ms, ev[i].get(), ev[i + 1].get()), "cuEventElapsedTime");
        times[i].push_back(ms);
      }
    }
  } catch (...) {
    if (act) act->stop();
    throw;
  }
  // CUPTI's durations of the same launches: the plan's kernels in launch order, sample by sample.
  std::vector<std::vector<double>> kernel_ms(n);
  if (act) {
    const uint32_t ctx_id = act->context_id(dev_.context());
    const uint32_t stream_id = act->stream_id(dev_.context(), dev_.stream());
    std::vector<double> seen;
    for (const auto& r : act->stop())
      if (plan_launch(r, ctx_id, stream_id)) seen.push_back(r.ms());
    if (seen.size() == n * static_cast<size_t>(samples))
      for (size_t k = 0; k < seen.size(); ++k) kernel_ms[k % n].push_back(seen[k]);
  }
  std::vector<LaunchTime> out;
  double total = 0;
  for (size_t i = 0; i < n; ++i) {
    out.push_back({plan.kernel_of(i), summarize(times[i]).median_ms, 0,
                   kernel_ms[i].empty() ? -1.0 : summarize(kernel_ms[i]).median_ms});
    total += out.back().median_ms;
  }
  for (auto& l : out) l.share = total > 0 ? l.median_ms / total : 0;
  return out;
}

EvaluationResult Evaluation::run() {
  EvaluationResult res;
  EvalOutcome& o = res.outcome;
  o.device = dev_.summary();
  o.stop_rule = rq_.stop_rule;
  o.knobs = rq_.knobs;
  try {
    allocate();
    o.flush_bytes = static_cast<int64_t>(flush_.bytes());
    const bool native = rq_.reference_kind == ReferenceKind::cuda;
    Candidate cand = parse_candidate(rq_.candidate.source, rq_.candidate.name);
    Module cand_mod(read_text_file(rq_.candidate.cubin_path));
    PlanExecutor cand_plan(dev_, cand_mod, cand, tensors(cand_out_), rq_.scalars, "candidate " + rq_.candidate.name);
    // A native reference runs here, on inputs the runner makes; a PyTorch one comes from the server.
    std::unique_ptr<Candidate> ref;
    std::unique_ptr<Module> ref_mod;
    std::unique_ptr<PlanExecutor> ref_plan;
    if (native) {
      ref = std::make_unique<Candidate>(parse_candidate(rq_.reference.source, rq_.reference.name));
      ref_mod = std::make_unique<Module>(read_text_file(rq_.reference.cubin_path));
      ref_plan = std::make_unique<PlanExecutor>(dev_, *ref_mod, *ref, tensors(ref_out_), rq_.scalars,
                                                "reference " + rq_.reference.name);
    }
    plan_scratch_ = join({cand_plan.scratch(), ref_plan ? ref_plan->scratch() : Buffers{}});
    bounds_.fill(all_buffers());

    for (int t = 0; t < rq_.trials; ++t) {
      const std::string ctx = fmt::format("trial {}", t);
      if (native) {
        new_inputs(t);
        bounds_.seal(guarded(pristine_));
        bounds_.unseal(guarded(ref_out_));  // the reference rewrites them
        poison(ref_out_);
        ref_plan->poison_scratch();
        ref_plan->run(true, ctx);
        check_reference_writes("its run for correctness " + ctx);
        bounds_.seal(guarded(ref_out_));
      } else {
        import_trial(t);
        bounds_.seal(guarded(pristine_));
      }
      // The candidate sees untouched inputs and outputs that hold nothing it did not write.
      restore_inputs();
      poison(cand_out_);
      cand_plan.poison_scratch();
      cand_plan.run(true, ctx);
      o.trials_run = t + 1;
      check_candidate_writes("correctness " + ctx);
      const bool match = native ? outputs_match(t, "correctness", o, pointers(ref_out_), {})
                                : match_server_outputs(t, "correctness", t == rq_.trials - 1, o);
      if (!match) {
        o.failure_stage = "correctness";
        return res;
      }
    }
    o.correct = true;
    if (!rq_.timing) return res;

    bool failed = false;
    if (native && rq_.time_reference) {
      bounds_.unseal(guarded(ref_out_));  // rewritten by every sample
      o.reference_time = time_plan(*ref_plan, ref_out_, "timing reference", false, o, failed);
      check_reference_writes("the reference's timing");
      bounds_.seal(guarded(ref_out_));
    }
    // Checked once after all the samples: the checks stay out of the timed spans and cost one
    // check per pass, not per sample (the bands and seals keep what any sample did).
    o.candidate_time = time_plan(cand_plan, cand_out_, "timing candidate", true, o, failed);
    check_candidate_writes("the timing");
    // The re-checks compared against the runner's copy of the server's outputs, which candidate
    // code could reach; the last word goes to the server's own tensors.
    if (!failed && !native) {
      ++o.rechecks;
      failed = !match_server_outputs(rq_.trials - 1, "final check against the reference server", false, o);
    }
    if (failed) {
      o.correct = false;
      o.failure_stage = "re-check";
      return res;
    }
    if (rq_.per_launch) {
      o.launch_times = time_launches(cand_plan, std::max(1, rq_.knobs.per_launch_samples));
      check_candidate_writes("the per-launch timing");
    }
    if (rq_.metrics) {
      collect_metrics(cand_plan, o);
      check_candidate_writes("the hardware counters' runs");
    }
    if (rq_.cupti_check) {
      o.cupti = cupti_check(cand_plan);
      if (!o.cupti->problem.empty()) o.flags.push_back("cupti: " + o.cupti->problem);
      check_candidate_writes("the CUPTI cross-check");
    }
    if (rq_.baseline) o.ab = compare_ab(cand_plan);
    for (const auto& t : rq_.inputs) o.bytes_moved += t.bytes();
    for (const auto& t : rq_.outputs) o.bytes_moved += t.bytes();
    const double med_s = o.candidate_time->median_ms * 1e-3;
    if (med_s > 0) o.achieved_gbs = static_cast<double>(o.bytes_moved) / med_s / 1e9;
    if (o.device.peak_gbs > 0) {
      o.bandwidth_share = o.achieved_gbs / o.device.peak_gbs;
      o.memory_floor_ms = static_cast<double>(o.bytes_moved) / (o.device.peak_gbs * 1e9) * 1e3;
      if (o.candidate_time->median_ms < o.memory_floor_ms)
        o.flags.push_back(
            fmt::format("suspicious: median {:.4f} ms is below the memory floor {:.4f} ms ({} bytes at "
                        "{:.0f} GB/s peak)",
                        o.candidate_time->median_ms, o.memory_floor_ms, o.bytes_moved, o.device.peak_gbs));
    }
  } catch (const PlanError& e) {
    o.failure_stage = "plan";
    o.message = e.what();
  } catch (const BoundsViolation& e) {
    o.correct = false;
    o.failure_stage = "bounds";
    o.message = e.what();
  } catch (const ReferenceFailure& e) {
    o.correct = false;
    o.failure_stage = "reference";
    o.message = e.what();
  } catch (const CudaError& e) {
    o.correct = false;
    o.failure_stage = "launch";
    o.message = e.what();
    res.restart = e.sticky();
  }
  return res;
}

}  // namespace

EvaluationResult evaluate(const Device& dev, Harness& harness, const EvalRequest& rq, const AskKagent& ask) {
  return Evaluation(dev, harness, rq, ask).run();
}

}  // namespace kagent::runner
