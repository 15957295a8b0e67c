// Hardware counters: each launch of one execution of the plan through the CUPTI range profiler.
//
// The plan runs launch by launch, never as its CUDA graph: CUPTI's kernel replay sees no kernel
// inside a graph launch (a graph plan once reported 0 kernels for 3 launches). Each kernel's counters
// are its own either way; only the gaps between launches differ, and those are the timing's, which
// the graph keeps. A library step runs as many kernels as its library chooses, so it is profiled in
// a session of its own and its kernels are summed into its row; the plan's kernel launches between
// library steps share a session, one range per launch.
#include <fmt/format.h>

#include "evaluation_impl.hpp"
#include "kagent/profile/counters.hpp"
#include "range_profiler.hpp"

namespace kagent::runner {

namespace {

// Launches profiled in one session: a run of kernel launches, or one library step.
struct Segment {
  size_t first = 0, count = 0;
  bool library = false;
};

// At most this many kernel launches per session (the range profiler holds 256 ranges).
constexpr size_t kLaunchesPerSession = 128;

std::vector<Segment> segments(const PlanExecutor& plan) {
  std::vector<Segment> out;
  for (size_t i = 0; i < plan.launch_count(); ++i) {
    const bool library = plan.is_library_step(i);
    if (!library && !out.empty() && !out.back().library && out.back().count < kLaunchesPerSession)
      ++out.back().count;
    else
      out.push_back({i, 1, library});
  }
  return out;
}

// A library step's kernels as one row: durations, bytes and FLOPs summed; the shares weighted by each
// kernel's duration (the step's share of the GPU over its whole time).
KernelMetrics merged(const std::string& step, const std::vector<KernelMetrics>& kernels) {
  KernelMetrics m;
  m.kernel = step;
  for (const auto& k : kernels) {
    m.duration_ms += k.duration_ms;
    m.dram_bytes += k.dram_bytes;
    m.fp32_flops += k.fp32_flops;
  }
  if (m.duration_ms <= 0) return m;
  for (const auto& k : kernels) {
    const double w = k.duration_ms / m.duration_ms;
    m.dram_pct += w * k.dram_pct;
    m.sm_pct += w * k.sm_pct;
    m.occupancy_pct += w * k.occupancy_pct;
    m.l2_hit_pct += w * k.l2_hit_pct;
    m.l1_hit_pct += w * k.l1_hit_pct;
    m.tensor_pct += w * k.tensor_pct;
  }
  return m;
}

}  // namespace

void Evaluation::collect_metrics(PlanExecutor& plan, EvalOutcome& o) {
  phase("hardware counters");
  const std::string context = "hardware counters";
  try {
    const std::vector<Segment> segs = segments(plan);
    std::vector<KernelMetrics> metrics;
    for (size_t s = 0; s < segs.size(); ++s) {
      const Segment& g = segs[s];
      auto ranges = profile_ranges(
          dev_.context(), rq_.gpu, profile::counter_metrics(),
          [&] {
            // The first profiling pass (segment) starts as every timed sample does; later ones continue the same
            // execution (what the launches before them wrote stays), with the L2 flushed again.
            if (s == 0)
              prepare_sample(plan, cand_out_);
            else
              h_.flush(flush_.get(), flush_.bytes());
            check(cu().cuCtxSynchronize(), "hardware counters: set-up");
          },
          [&] {
            for (size_t i = g.first; i < g.first + g.count; ++i) plan.launch(i, context);
            check(cu().cuCtxSynchronize(), context);
          });
      if (g.library) {
        if (ranges.empty()) {
          o.metrics_note =
              fmt::format("the range profiler saw no kernel of launch[{}] ({})", g.first, plan.kernel_of(g.first));
          return;
        }
        std::vector<KernelMetrics> kernels;
        for (const auto& r : ranges) kernels.push_back(profile::kernel_metrics(plan.kernel_of(g.first), r.values));
        metrics.push_back(merged(plan.kernel_of(g.first), kernels));
        continue;
      }
      if (ranges.size() != g.count) {
        o.metrics_note =
            fmt::format("the range profiler reported {} kernels for launches {} to {} ({} kernel launches)",
                        ranges.size(), g.first, g.first + g.count - 1, g.count);
        return;
      }
      // Auto ranges are numbered in launch order: range i is the segment's launch i.
      for (size_t i = 0; i < ranges.size(); ++i)
        metrics.push_back(profile::kernel_metrics(plan.kernel_of(g.first + i), ranges[i].values));
    }
    o.metrics = std::move(metrics);
    if (plan.uses_graph())
      o.metrics_replay =
          "this pass ran the plan's launches one by one, not as its CUDA graph (CUPTI's kernel replay sees no kernel "
          "inside a graph launch): each kernel's counters are its own either way; the timing above is the graph's";
  } catch (const CudaError&) {
    throw;  // the candidate faulted during the replay: the usual path for CUDA errors
  } catch (const std::exception& e) {
    o.metrics.clear();
    o.metrics_note = e.what();
  }
}

}  // namespace kagent::runner
