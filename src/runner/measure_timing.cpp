// Timing: the reference's and the candidate's timed samples (warm-up, the stopping rule, the
// outputs re-checked between samples), and what the candidate's median says about bandwidth.
#include <algorithm>
#include <cmath>

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
    // A precision failure keeps its stage: the outputs were right element by element.
    if (o.failure_stage != FailureStage::precision) o.failure_stage = FailureStage::recheck;
    return false;
  }
  return true;
}

namespace {
// The next group of samples is queued before the host reads the current one while a group takes
// at most this much GPU time: then the host's turn-around between groups (reading the events and
// the re-check, the stop rule, queueing) would leave the GPU idle for a share worth saving. A
// longer group is not queued ahead: the turn-around is small beside it, and a group queued ahead
// when the stop rule stops is GPU time spent for nothing.
constexpr double kQueueAheadMaxMs = 5.0;
}  // namespace

TimingSummary Evaluation::time_plan(PlanExecutor& plan, const std::vector<GuardedBuffer>& outs,
                                    const std::string& label, bool recheck, EvalOutcome& o, bool& recheck_failed) {
  const auto wall0 = Clock::now();
  auto wall_s = [&] { return std::chrono::duration<double>(Clock::now() - wall0).count(); };
  // The candidate's samples share one copy of its sealed inputs (measure_times); a reference's are
  // restored before each of its runs.
  const bool restore = !recheck;
  // The samples between two re-checks are queued back to back and waited for once: the GPU does not
  // idle while the host waits for each sample and queues the next. Each sample still has its own
  // set-up (poison, flush) and its own events. kGroupSlots groups' events: one read while the
  // others run.
  const size_t group = static_cast<size_t>(std::max(1, rq_.knobs.check_every));
  std::vector<Events> evs(kGroupSlots * group);

  // Warm-up is about clocks ramping up: what counts is how long the GPU has been busy (restores,
  // flushes and the plan), not the plan's share of it. One run first, then as many at once as the
  // rest needs at that pace (at most kGroupSlots groups' worth).
  phase(label + ": warm-up");
  // The previous pass of this runner, ended just now, kept the clocks up: its busy time counts
  // toward warmup_ms; the warm-up's runs are still this pass's own.
  const double gap_ms = std::chrono::duration<double, std::milli>(wall0 - h_.last_pass.end).count();
  const double credit_ms = h_.last_pass.busy_ms > 0 && gap_ms >= 0 && gap_ms <= rq_.knobs.warmup_credit_gap_ms
                               ? std::min(h_.last_pass.busy_ms, rq_.knobs.warmup_ms)
                               : 0.0;
  int runs = 0;
  double warm_ms = 0;  // this pass's own
  while (!warmup_done(runs, warm_ms + credit_ms, rq_.knobs) && wall_s() < rq_.stop_rule.max_wall_s) {
    size_t n = 1;
    if (runs > 0 && warm_ms > 0) {
      const double per_run = warm_ms / runs;
      const double want =
          std::max<double>(rq_.knobs.warmup_runs - runs, (rq_.knobs.warmup_ms - credit_ms - warm_ms) / per_run);
      n = static_cast<size_t>(std::clamp(std::ceil(want), 1.0, static_cast<double>(evs.size())));
    }
    for (size_t i = 0; i < n; ++i) enqueue_sample(plan, outs, evs[i], label, restore);
    for (size_t i = 0; i < n; ++i) warm_ms += read_sample(evs[i], label).busy_ms;
    runs += static_cast<int>(n);
  }

  // A group's re-check is queued right behind its last sample, so the next group can be queued
  // before the host reads this one (the outputs it checks are overwritten by then). Where the
  // re-check cannot be queued (an fp64 twin left in the server), the host checks after each group.
  phase(label + ": sampling");
  const bool queued_checks = recheck && rechecks_can_queue();
  const bool may_queue_ahead = !recheck || queued_checks;
  // Groups go to the slots in turn: `slot` is read next, `queued` groups are on the stream from it on.
  size_t slot = 0, queued = 0;
  auto queue_group = [&] {
    const size_t s = (slot + queued) % kGroupSlots;
    for (size_t i = 0; i < group; ++i) enqueue_sample(plan, outs, evs[s * group + i], label, restore);
    if (queued_checks) enqueue_recheck(s);
    ++queued;
  };
  std::vector<double> samples;
  double busy_ms = 0;
  double per_sample_ms = runs > 0 ? warm_ms / runs : 0;  // GPU busy time per sample, as last seen
  size_t ran = 0;                                        // samples run, counted or not
  StopDecision d;
  double between_ms = 0, wait_ms = 0;
  const Events* last_read = nullptr;
  check(cu().cuEventRecord(span_begin_.get(), dev_.stream()), "cuEventRecord");
  queue_group();
  while (true) {
    const bool ahead = may_queue_ahead && per_sample_ms * static_cast<double>(group) <= kQueueAheadMaxMs;
    while (ahead && queued < kGroupSlots) queue_group();
    double group_busy_ms = 0;
    size_t counted = 0;
    for (size_t i = 0; i < group && !d.stop; ++i, ++counted) {
      Events& ev = evs[slot * group + i];
      const auto wait0 = Clock::now();
      const Sample sample = read_sample(ev, label);
      wait_ms += std::chrono::duration<double, std::milli>(Clock::now() - wait0).count();
      if (i > 0) between_ms += elapsed_ms(evs[slot * group + i - 1].stop_.get(), ev.begin_.get());
      last_read = &ev;
      samples.push_back(sample.plan_ms);
      busy_ms += sample.busy_ms;
      group_busy_ms += sample.busy_ms;
      // A cap reached inside a group stops at that sample; the group's later samples ran but are
      // not counted, so the samples a stop rule sees are those it would have seen one at a time.
      if (i + 1 < group) d = should_stop(samples, wall_s(), rq_.stop_rule, busy_ms / 1000.0);
    }
    ran += group;
    per_sample_ms = group_busy_ms / static_cast<double>(std::max<size_t>(counted, 1));
    // Outputs checked right after the group's last stop event: deferred or racy work cannot hide.
    // A queued re-check is read even when the rule stopped inside the group: it has run.
    if (recheck && (queued_checks || !d.stop)) {
      ++o.rechecks;
      const std::string when = fmt::format("re-check after timing sample {}", ran);
      const auto wait0 = Clock::now();
      const bool ok = queued_checks ? read_recheck(slot, when, o) : recheck_outputs(when, o);
      wait_ms += std::chrono::duration<double, std::milli>(Clock::now() - wait0).count();
      if (!ok) {
        recheck_failed = true;
        break;
      }
    }
    --queued;
    slot = (slot + 1) % kGroupSlots;
    if (!d.stop) d = should_stop(samples, wall_s(), rq_.stop_rule, busy_ms / 1000.0);
    if (d.stop) break;  // groups queued ahead still run; their samples are not counted
    if (queued == 0) queue_group();
  }
  const double span_ms = last_read != nullptr ? elapsed_ms(span_begin_.get(), last_read->stop_.get()) : 0.0;
  // The last word on the outputs as the pass left them (a group queued ahead included).
  if (recheck && !recheck_failed) {
    ++o.rechecks;
    if (!recheck_outputs("re-check after timing", o)) recheck_failed = true;
  }
  TimingSummary s = summarize(samples);
  s.stop_reason = recheck_failed ? "outputs wrong during timing" : d.reason;
  s.warmup_n = runs;
  s.warmup_credit_ms = credit_ms;
  s.busy_s = busy_ms / 1000.0;
  s.wall_s = wall_s();
  s.span_s = span_ms / 1000.0;
  s.gap_s = between_ms / 1000.0;
  s.host_wait_s = wait_ms / 1000.0;
  h_.last_pass = {Clock::now(), warm_ms + busy_ms};
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
  return {elapsed_ms(ev.start_.get(), ev.stop_.get()), elapsed_ms(ev.begin_.get(), ev.stop_.get())};
}

double Evaluation::elapsed_ms(CUevent from, CUevent to) const {
  float ms = 0;
  check(cu().cuEventElapsedTime(&ms, from, to), "cuEventElapsedTime");
  return ms;
}

void Evaluation::note_bandwidth(EvalOutcome& o) const {
  kagent::note_bandwidth(o, rq_.inputs, rq_.outputs);
}

}  // namespace kagent::runner
