#include "library_step_times.hpp"

#include <chrono>
#include <memory>
#include <stdexcept>

#include <fmt/format.h>

#include "kagent/common/error.hpp"
#include "kagent/protocol/stats.hpp"
#include "kagent/spec/candidate.hpp"
#include "plan_executor.hpp"

namespace kagent::runner {

namespace {

using Clock = std::chrono::steady_clock;

// Untimed runs first: a library's first call of a shape loads its kernels.
constexpr int kWarmupRuns = 2;

LibraryStepTime time_one(const Device& dev, Harness& h, const LibraryStepsRequest& rq, size_t index,
                         const DeviceBuffer& flush) {
  LibraryStepTime out;
  const std::string who = fmt::format("library step {}", index);
  Candidate cand = parse_plan_candidate("/*kagent " + rq.plans[index].dump() + " */", who);
  for (Launch& l : cand.plan.launches) {
    // As the reference's call computes: TF32 only where its precision lets PyTorch use it.
    l.gemm.compute = rq.tf32 ? StepCompute::tf32 : StepCompute::automatic;
    l.conv.compute = l.gemm.compute;
  }
  // Only library steps: the harness's module is never asked for a kernel.
  PlanExecutor plan(dev, h.module(), cand, {}, {}, who);
  const std::vector<const GuardedBuffer*> scratch = plan.scratch();
  InitSpec init;
  init.kind = InitSpec::Kind::uniform;
  init.a = -1;
  init.b = 1;
  for (size_t i = 0; i < scratch.size() && i < cand.plan.scratch.size(); ++i) {
    const DType t = cand.plan.scratch[i].dtype;
    h.fill(scratch[i]->get(), static_cast<int64_t>(scratch[i]->bytes() / dtype_size(t)), t, init, 1000 + i);
  }
  for (size_t i = 0; i < plan.launch_count(); ++i) out.step += (i ? "; " : "") + plan.kernel_of(i);
  for (int i = 0; i < kWarmupRuns; ++i) plan.run(false, who);
  check(cu().cuStreamSynchronize(dev.stream()), who);

  Event start, stop;
  std::vector<double> ms;
  const auto wall0 = Clock::now();
  while (true) {
    h.flush(flush.get(), flush.bytes());
    check(cu().cuEventRecord(start.get(), dev.stream()), "cuEventRecord");
    plan.run(false, who);
    check(cu().cuEventRecord(stop.get(), dev.stream()), "cuEventRecord");
    check(cu().cuEventSynchronize(stop.get()), who);
    float t = 0;
    check(cu().cuEventElapsedTime(&t, start.get(), stop.get()), "cuEventElapsedTime");
    ms.push_back(t);
    const double wall_s = std::chrono::duration<double>(Clock::now() - wall0).count();
    if (should_stop(ms, wall_s, rq.stop_rule).stop) break;
  }
  out.median_ms = summarize(ms).median_ms;
  out.samples = static_cast<int>(ms.size());
  return out;
}

}  // namespace

std::vector<LibraryStepTime> time_library_steps(const Device& dev, Harness& h, const LibraryStepsRequest& rq) {
  // The baselines' flush: twice the L2, read before every sample.
  const DeviceBuffer flush(static_cast<size_t>(std::max<int64_t>(dev.summary().l2_bytes, 1 << 20) * 2));
  check(cu().cuMemsetD8Async(flush.get(), 0, flush.bytes(), dev.stream()), "clear flush buffer");
  std::vector<LibraryStepTime> times;
  for (size_t i = 0; i < rq.plans.size(); ++i) {
    try {
      times.push_back(time_one(dev, h, rq, i, flush));
    } catch (const CudaError& e) {
      if (e.sticky()) throw;
      // Out of memory, a shape the library refuses at run time: this step's, the next may run.
      check(cu().cuStreamSynchronize(dev.stream()), "after a failed library step");
      times.push_back({std::nullopt, 0, "", e.what()});
    } catch (const std::exception& e) {  // PlanError, InputError (the plan's text)
      times.push_back({std::nullopt, 0, "", e.what()});
    }
  }
  return times;
}

}  // namespace kagent::runner
