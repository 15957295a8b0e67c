// The CUPTI cross-check: a few more timed samples with CUPTI's kernel records alongside, to see
// that the events' span holds the plan's launches and nothing else.
#include <algorithm>
#include <map>

#include <fmt/format.h>

#include "evaluation_impl.hpp"

namespace kagent::runner {

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

// Whether a kernel lies inside one sample's window: after a harness kernel ended and before the next
// one started. The harness kernels (L2 flush, restore, poison) open every sample on the runner's
// stream, and the next sample's begin only after the last one's stop event completed, so work a
// library forked onto its own streams and joined back lies inside; work nobody waited for runs on
// into the next sample's harness kernels. `harness` is sorted by start.
static bool inside_a_sample(const KernelRecord& r, const std::vector<const KernelRecord*>& harness) {
  auto next = std::lower_bound(harness.begin(), harness.end(), r.start_ns,
                               [](const KernelRecord* h, uint64_t t) { return h->start_ns < t; });
  if (next == harness.begin()) return false;
  const KernelRecord* prev = *(next - 1);
  return prev->end_ns <= r.start_ns && (next == harness.end() || r.end_ns <= (*next)->start_ns);
}

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
  std::vector<double> per_launch;            // the plan's kernels in start order
  std::map<std::string, int> others;         // kernels outside the plan, by name, for the message
  std::vector<const KernelRecord*> harness;  // in start order, as stop() returns the records
  for (const auto& r : recs)
    if (r.context_id == ctx_id && r.stream_id == stream_id && r.name.starts_with("kagent_")) harness.push_back(&r);
  for (const auto& r : recs) {
    if (plan_launch(r, ctx_id, stream_id)) {
      ++c.launches_seen;
      c.kernel_ms += r.ms();
      per_launch.push_back(r.ms());
    } else if (r.device_launched) {
      ++c.other_kernels;
      ++others[r.name.empty() ? std::string("(no name)") : r.name];
    } else if (plan.has_library_steps() && r.context_id == ctx_id && r.stream_id != stream_id &&
               inside_a_sample(r, harness)) {
      // The plan launches nothing off its stream itself (the runner launches every kernel); only
      // a library does, on streams of its own that it joins back before returning.
      ++c.library_side_kernels;
    } else if (r.context_id != ctx_id || r.stream_id != stream_id) {
      ++c.off_stream;
    }
  }
  size_t per_run = plan.launch_count();
  if (plan.has_library_steps() && c.launches_seen >= c.launches_expected && c.launches_seen % kSamples == 0) {
    // Library steps launch kernels of the library's choosing (at least one each): the count per
    // run is what CUPTI saw, provided every sample saw the same number.
    per_run = static_cast<size_t>(c.launches_seen / kSamples);
    c.launches_expected = c.launches_seen;
  }
  if (c.launches_seen == c.launches_expected) {
    // Consecutive per_run records make one sample (one stream: the samples do not overlap).
    std::vector<double> per_sample(kSamples, 0.0);
    for (size_t i = 0; i < per_launch.size(); ++i) per_sample[i / per_run] += per_launch[i];
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

}  // namespace kagent::runner
