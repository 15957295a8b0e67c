// Per-launch timing: each launch of the plan between events of its own, with CUPTI's durations of
// the same launches where CUPTI is there (the profile's breakdown, not the verdict's timing).
#include <algorithm>

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
      act->start(/*tagging=*/true);
    } catch (const std::exception&) {
      act = nullptr;  // the breakdown then has the events' times only
    }
  }
  try {
    for (int s = 0; s < samples; ++s) {
      prepare_sample(plan, cand_out_);
      for (size_t i = 0; i < n; ++i) {
        check(cu().cuEventRecord(ev[i].get(), dev_.stream()), "cuEventRecord");
        // Tagged, so that CUPTI's kernels map back to the launch (and sample) that ran them, also
        // the kernels a library step chose.
        if (act) act->push_tag(static_cast<uint64_t>(s) * n + i + 1);
        plan.launch(i, "per-launch timing");
        if (act) act->pop_tag();
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
  // CUPTI's durations of the same launches, summed per launch and sample (a library step may run
  // several kernels), and the names of the kernels each launch ran.
  std::vector<std::vector<double>> kernel_ms(n);
  std::vector<std::vector<std::string>> names(n);
  if (act) {
    const uint32_t ctx_id = act->context_id(dev_.context());
    const uint32_t stream_id = act->stream_id(dev_.context(), dev_.stream());
    const std::vector<KernelRecord> recs = act->stop();
    std::vector<double> seen;
    std::vector<std::vector<double>> by_tag(n * static_cast<size_t>(samples));
    std::vector<std::vector<bool>> hit(n, std::vector<bool>(static_cast<size_t>(samples), false));
    bool tagged = true;
    for (const auto& r : recs) {
      if (r.device_launched || r.context_id != ctx_id || r.name.starts_with("kagent_")) continue;
      if (r.stream_id == stream_id) seen.push_back(r.ms());
      if (r.tag == 0 || r.tag > by_tag.size()) {
        tagged = tagged && r.stream_id != stream_id;  // an untagged plan kernel: no attribution
        continue;
      }
      const size_t t = r.tag - 1, i = t % n, smp = t / n;
      by_tag[t].push_back(r.ms());
      hit[i][smp] = true;
      if (std::find(names[i].begin(), names[i].end(), r.name) == names[i].end() && names[i].size() < 8)
        names[i].push_back(r.name);
    }
    for (size_t i = 0; i < n && tagged; ++i)
      tagged = std::all_of(hit[i].begin(), hit[i].end(), [](bool b) { return b; });
    if (tagged) {
      for (size_t t = 0; t < by_tag.size(); ++t) {
        double sum = 0;
        for (double ms : by_tag[t]) sum += ms;
        kernel_ms[t % n].push_back(sum);
      }
    } else {
      for (auto& v : names) v.clear();
      if (seen.size() == n * static_cast<size_t>(samples))
        for (size_t k = 0; k < seen.size(); ++k) kernel_ms[k % n].push_back(seen[k]);
    }
  }
  std::vector<LaunchTime> out;
  double total = 0;
  for (size_t i = 0; i < n; ++i) {
    out.push_back({plan.kernel_of(i), summarize(times[i]).median_ms, 0,
                   kernel_ms[i].empty() ? -1.0 : summarize(kernel_ms[i]).median_ms,
                   plan.is_library_step(i) ? names[i] : std::vector<std::string>{}});
    total += out.back().median_ms;
  }
  for (auto& l : out) l.share = total > 0 ? l.median_ms / total : 0;
  return out;
}

}  // namespace kagent::runner
