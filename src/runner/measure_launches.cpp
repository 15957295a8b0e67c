// Per-launch timing: each launch of the plan between events of its own, with CUPTI's durations of
// the same launches where CUPTI is there (the profile's breakdown, not the verdict's timing).
#include <algorithm>

#include "evaluation_impl.hpp"

namespace kagent::runner {

namespace {

// The length of the union of [start, end) intervals, in ms.
double union_ms(std::vector<std::pair<uint64_t, uint64_t>>& spans) {
  std::sort(spans.begin(), spans.end());
  uint64_t total = 0, open = 0, close = 0;
  bool any = false;
  for (const auto& [a, b] : spans) {
    if (!any || a > close) {
      if (any) total += close - open;
      open = a, close = b, any = true;
    } else {
      close = std::max(close, b);
    }
  }
  if (any) total += close - open;
  return static_cast<double>(total) * 1e-6;
}

}  // namespace

std::vector<LaunchTime> Evaluation::time_launches(PlanExecutor& plan, int samples) {
  phase("timing each launch");
  const size_t n = plan.launch_count();
  if (n == 0) return {};
  std::vector<Event> begin(n), end(n);
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
  // A library step runs as many kernels as the library likes: an empty harness kernel after each
  // launch, outside its events, marks in CUPTI's records where one launch ends and the next begins.
  const bool marked = act && plan.has_library_steps();
  try {
    for (int s = 0; s < samples; ++s) {
      prepare_sample(plan, cand_out_);
      for (size_t i = 0; i < n; ++i) {
        check(cu().cuEventRecord(begin[i].get(), dev_.stream()), "cuEventRecord");
        plan.launch(i, "per-launch timing");
        check(cu().cuEventRecord(end[i].get(), dev_.stream()), "cuEventRecord");
        if (marked) h_.mark();
      }
      check(cu().cuEventSynchronize(end[n - 1].get()), "per-launch timing");
      for (size_t i = 0; i < n; ++i) {
        float ms = 0;
        check(cu().cuEventElapsedTime(&ms, begin[i].get(), end[i].get()), "cuEventElapsedTime");
        times[i].push_back(ms);
      }
    }
  } catch (...) {
    if (act) act->stop();
    throw;
  }
  // CUPTI's durations of the same launches, per launch and sample (summed over the kernels of a
  // library step), and the names of the kernels each library step ran.
  std::vector<std::vector<double>> kernel_ms(n);
  std::vector<std::vector<std::string>> names(n);
  if (act) {
    const uint32_t ctx_id = act->context_id(dev_.context());
    const uint32_t stream_id = act->stream_id(dev_.context(), dev_.stream());
    const std::vector<KernelRecord> recs = act->stop();  // in start order
    if (!marked) {
      std::vector<double> seen;
      for (const auto& r : recs)
        if (plan_launch(r, ctx_id, stream_id)) seen.push_back(r.ms());
      if (seen.size() == n * static_cast<size_t>(samples))
        for (size_t k = 0; k < seen.size(); ++k) kernel_ms[k % n].push_back(seen[k]);
    } else {
      // Each sample opens with harness kernels (flush, restore, poison); then launch 0's kernels,
      // a mark, launch 1's kernels, a mark, ... A library's kernels on its own streams start
      // before the mark that follows their step (the step joins them back first).
      // [sample][launch]: the kernels' [start, end) in ns. A library may run kernels side by side on
      // its own streams: the launch's CUPTI time is the union of its kernels' intervals.
      std::vector<std::vector<std::vector<std::pair<uint64_t, uint64_t>>>> spans;
      size_t at = n;  // launch index inside the current sample; n: between samples
      bool in_harness = false;
      bool consistent = true;
      for (const auto& r : recs) {
        if (r.device_launched || r.context_id != ctx_id) continue;
        if (r.name == "kagent_mark") {
          ++at;
          in_harness = false;
          continue;
        }
        if (r.name.starts_with("kagent_")) {
          if (!in_harness) spans.emplace_back(n);
          in_harness = true;
          at = 0;
          continue;
        }
        in_harness = false;
        if (at >= n || spans.empty()) {
          consistent = false;  // a kernel outside any launch's window
          continue;
        }
        spans.back()[at].emplace_back(r.start_ns, r.end_ns);
        if (std::find(names[at].begin(), names[at].end(), r.name) == names[at].end() && names[at].size() < 8)
          names[at].push_back(r.name);
      }
      consistent = consistent && spans.size() == static_cast<size_t>(samples);
      for (const auto& smp : spans)
        consistent = consistent && std::all_of(smp.begin(), smp.end(), [](const auto& v) { return !v.empty(); });
      if (consistent) {
        for (auto& smp : spans)
          for (size_t i = 0; i < n; ++i) kernel_ms[i].push_back(union_ms(smp[i]));
      } else {
        for (auto& v : names) v.clear();
      }
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
