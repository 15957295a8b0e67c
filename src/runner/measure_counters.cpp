// Hardware counters: each launch of one execution of the plan through the CUPTI range profiler.
#include <fmt/format.h>

#include "evaluation_impl.hpp"
#include "kagent/profile/counters.hpp"
#include "range_profiler.hpp"

namespace kagent::runner {

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

}  // namespace kagent::runner
