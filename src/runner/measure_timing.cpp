// Timing: the reference's and the candidate's timed samples (warm-up, the stopping rule, the
// outputs re-checked between samples), and what the candidate's median says about bandwidth.
#include <algorithm>

#include <fmt/format.h>

#include "evaluation_impl.hpp"

namespace kagent::runner {

bool Evaluation::measure_times(PlanExecutor& cand_plan, PlanExecutor* ref_plan, EvalOutcome& o) {
  const bool native = ref_plan != nullptr;
  bool failed = false;
  if (native && rq_.time_reference) {
    bounds_.unseal(guarded(ref_out_));  // rewritten by every sample
    o.reference_time = time_plan(*ref_plan, ref_out_, "timing reference", false, o, failed);
    check_reference_writes("the reference's timing");
    bounds_.seal(guarded(ref_out_));
  }
  // Checked once after all the samples: the checks stay out of the timed spans and cost one
  // check per pass, not per sample (the bands and seals keep what any sample did). The inputs are
  // restored once and sealed, not restored before every sample: a candidate that writes them fails
  // at this check (stage "inputs"), so every timed run saw the inputs the trials checked it on.
  restore_inputs();
  bounds_.seal(guarded(in_));
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
    o.failure_stage = FailureStage::recheck;
    return false;
  }
  return true;
}

TimingSummary Evaluation::time_plan(PlanExecutor& plan, const std::vector<GuardedBuffer>& outs,
                                    const std::string& label, bool recheck, EvalOutcome& o, bool& recheck_failed) {
  const auto wall0 = Clock::now();
  auto wall_s = [&] { return std::chrono::duration<double>(Clock::now() - wall0).count(); };
  // The candidate's samples share one copy of its sealed inputs (measure_times); a reference's are
  // restored before each of its runs.
  const bool restore = !recheck;
  // The samples between two re-checks are queued back to back and waited for once: the GPU does not
  // idle while the host waits for each sample and queues the next. Each sample still has its own
  // set-up (poison, flush) and its own events; the re-check reads the last one's outputs.
  const size_t group = static_cast<size_t>(std::max(1, rq_.knobs.check_every));
  std::vector<Events> evs(group);

  // Warm-up is about clocks ramping up: what counts is how long the GPU has been busy (restores,
  // flushes and the plan), not the plan's share of it.
  phase(label + ": warm-up");
  int runs = 0;
  double warm_ms = 0;
  while (!warmup_done(runs, warm_ms, rq_.knobs) && wall_s() < rq_.stop_rule.max_wall_s) {
    enqueue_sample(plan, outs, evs[0], label, restore);
    warm_ms += read_sample(evs[0], label).busy_ms;
    ++runs;
  }
  phase(label + ": sampling");
  std::vector<double> samples;
  StopDecision d;
  while (!d.stop) {
    for (size_t i = 0; i < group; ++i) enqueue_sample(plan, outs, evs[i], label, restore);
    for (size_t i = 0; i < group && !d.stop; ++i) {
      samples.push_back(read_sample(evs[i], label).plan_ms);
      // A cap reached inside a group stops at that sample; the group's later samples ran but are
      // not counted, so the samples a stop rule sees are those it would have seen one at a time.
      if (i + 1 < group) d = should_stop(samples, wall_s(), rq_.stop_rule);
    }
    if (d.stop) break;
    // Outputs checked right after the stop event: deferred or racy work cannot hide.
    if (recheck) {
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

void Evaluation::enqueue_sample(PlanExecutor& plan, const std::vector<GuardedBuffer>& outs, Events& ev,
                                const std::string& label, bool restore) {
  prepare_sample(plan, outs, ev.begin_.get(), restore);
  check(cu().cuEventRecord(ev.start_.get(), dev_.stream()), "cuEventRecord");
  plan.run(false, label);
  check(cu().cuEventRecord(ev.stop_.get(), dev_.stream()), "cuEventRecord");
}

Evaluation::Sample Evaluation::timed_sample(PlanExecutor& plan, const std::vector<GuardedBuffer>& outs, Events& ev,
                                            const std::string& label) {
  enqueue_sample(plan, outs, ev, label, true);
  return read_sample(ev, label);
}

Evaluation::Sample Evaluation::read_sample(Events& ev, const std::string& label) {
  check(cu().cuEventSynchronize(ev.stop_.get()), label);
  float plan_ms = 0, busy_ms = 0;
  check(cu().cuEventElapsedTime(&plan_ms, ev.start_.get(), ev.stop_.get()), "cuEventElapsedTime");
  check(cu().cuEventElapsedTime(&busy_ms, ev.begin_.get(), ev.stop_.get()), "cuEventElapsedTime");
  return {plan_ms, busy_ms};
}

void Evaluation::note_bandwidth(EvalOutcome& o) const {
  kagent::note_bandwidth(o, rq_.inputs, rq_.outputs);
}

}  // namespace kagent::runner
