#pragma once
// The batch engine behind `kagent bench`: a shared queue of problems and worker threads (one or
// more per GPU; common/worker_pool.hpp, which `kagent check` runs on too), each owning its job
// (and so its runner and reference server). Workers take items by the judge's affinity policy
// (judge/affinity.hpp): a problem's samples go to a worker that has it warm. Whatever happens to
// one problem becomes its record and the batch goes on; an interrupt stops the workers after the
// problems they are on.
#include <atomic>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "kagent/bench/problems.hpp"
#include "kagent/judge/backend.hpp"
#include "kagent/report/results.hpp"

namespace kagent::bench {

// Turns one problem into a record on one GPU. Created and used inside its worker's thread (the
// runner it starts is tied to that thread's life). run() returns nullopt when it was interrupted
// before the problem was done (nothing is recorded; a resumed batch runs it again). It may throw:
// EnvError counts toward the worker's environment failures, anything else becomes an "error"
// record.
class ProblemJob {
 public:
  virtual ~ProblemJob() = default;
  virtual std::optional<report::ResultRecord> run(const Problem& p) = 0;
  // A hint before run(): `next` are likely the problems this job gets after the one it runs now, in
  // order (judge::EvalBackend::expect). Never throws.
  virtual void expect(const std::vector<Problem>& next) { (void)next; }
  // What its backend holds warm (judge::EvalBackend::warm), for the workers' affinity
  // (judge/affinity.hpp); nullopt when it does not say: the batch then counts the problem it ran
  // last as the only one warm. Called by its worker's thread between problems.
  virtual std::optional<judge::WarmState> warm() { return std::nullopt; }
};

using JobFactory = std::function<std::unique_ptr<ProblemJob>(int gpu)>;

struct BatchOptions {
  std::vector<int> gpus = {0};
  int jobs_per_gpu = 1;
  // A worker whose environment fails on this many problems in a row (no GPU, reference server
  // cannot start) stops: the rest would fail the same way.
  int max_env_failures_in_a_row = 3;
  // A problem whose evaluation found the GPU busy (GpuBusyError: another process held the memory it
  // ran out of) is tried again this many times, after busy_wait_s, then 4x that, ..., before it is
  // recorded (as an environment error).
  int busy_retries = 2;
  double busy_wait_s = 5;
  // Building ahead (bench --samples): whether a problem's build is over, and a short wait for a
  // build to end. A worker takes only problems whose build is over (by the affinity policy), so a
  // GPU does not wait on a build while a built one waits; while none is, it waits and looks again.
  // Unset: every problem counts as built.
  std::function<bool(const Problem&)> ready;
  std::function<void()> wait_for_builds;
};

struct BatchEvents {
  std::function<void(const Problem&, int gpu)> started;
  std::function<void(const report::ResultRecord&)> finished;  // after the record is final (write it here)
};

struct BatchOutcome {
  int finished = 0;         // problems with a record from this batch
  int not_run = 0;          // left in the queue (interrupt, or every worker stopped)
  std::string env_failure;  // why workers stopped, when they did
  int workers_stopped = 0;
};

// Runs `problems` to the end, or until `stop` turns true (then the workers finish the problem
// they are on, which jobs may cut short and not record). Blocks until every worker has ended.
BatchOutcome run_batch(const std::vector<Problem>& problems, const BatchOptions& options, const JobFactory& make_job,
                       const BatchEvents& events, const std::atomic<bool>& stop);

// A record for a problem that failed outside the candidate (harness or environment error).
report::ResultRecord error_record(const Problem& p, const std::string& message, int gpu);

}  // namespace kagent::bench
