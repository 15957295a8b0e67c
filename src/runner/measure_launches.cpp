// Per-launch timing: each launch of the plan between events of its own, with CUPTI's durations of
// the same launches where CUPTI is there (the profile's breakdown, not the verdict's timing).
#include "evaluation_impl.hpp"

namespace kagent::runner {

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

}  // namespace kagent::runner
