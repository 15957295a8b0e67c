// A/B: the candidate against the request's baseline kernel (`kagent check --baseline`), timed in
// alternation on the same inputs, and whose stray store it was when a band is damaged.
#include <fmt/format.h>

#include "evaluation_impl.hpp"
#include "kagent/common/files.hpp"

namespace kagent::runner {

AbComparison Evaluation::compare_ab(PlanExecutor& cand_plan) {
  const PlanSource& src = *rq_.baseline;
  phase("A/B: loading the baseline " + src.name);
  Candidate base = parse_plan_candidate(src.source, src.name);
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

}  // namespace kagent::runner
