// An out-of-memory failure in an evaluation: the candidate's, or the GPU's other users'. A plan's
// scratch or a solution's allocations can exhaust a GPU on their own, and then the failure is the
// candidate's; but with other processes holding memory on the same GPU (ten `kagent eval` of a
// 6.4 GB problem at once) the same candidate would pass on an idle GPU, and a verdict must never
// depend on what else runs there.
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "kagent/common/error.hpp"
#include "kagent/eval/evaluator.hpp"
#include "kagent/gpu/memory_users.hpp"
#include "kagent/reference/ref_server.hpp"

namespace kagent {

namespace {

constexpr uint64_t kGiB = uint64_t{1} << 30;
// A CUDA context alone holds a few hundred MB: anything at all held by another process counts.
constexpr uint64_t kOthersThreshold = uint64_t{64} << 20;

}  // namespace

void Evaluator::settle_out_of_memory(EvalReport& rep) const {
  std::vector<pid_t> ours;
  if (runner_ && runner_->running()) ours.push_back(runner_->pid());
  if (warm_)  // every problem this GPU keeps warm: the pool's own, let go before this was settled
    for (pid_t p : warm_->pids()) ours.push_back(p);
  MemoryContention c = memory_contention(gpu_uuid_, ours);
  if (!c.note.empty()) {
    // Nothing tells who else is on the GPU: not judging is the safe side (exit 3, bench retries).
    throw GpuBusyError(
        fmt::format("GPU {} ran out of memory during the evaluation of {}, and whether other processes held its memory "
                    "cannot be told ({}): not judged. {}",
                    opt_.gpu, rep.candidate, c.note, rep.outcome.message));
  }
  if (c.others_bytes >= kOthersThreshold) {
    std::string pids;
    for (pid_t p : c.others) pids += (pids.empty() ? "" : ", ") + std::to_string(p);
    throw GpuBusyError(fmt::format(
        "GPU {} ran out of memory during the evaluation of {} while {} other process(es) (pid {}) held {:.1f} GiB "
        "of it: not judged, since the verdict would depend on them. Run fewer evaluations on this GPU at once "
        "(kagent bench retries). The error: {}",
        opt_.gpu, rep.candidate, c.others.size(), pids, static_cast<double>(c.others_bytes) / kGiB,
        rep.outcome.message));
  }
  rep.outcome.message += " (no other process held memory on this GPU: the candidate's own demand)";
}

}  // namespace kagent
