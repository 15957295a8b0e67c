#include "kagent/bench/batch.hpp"

#include <chrono>
#include <mutex>
#include <optional>
#include <thread>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "kagent/common/error.hpp"
#include "kagent/common/worker_pool.hpp"
#include "kagent/judge/backend.hpp"

namespace kagent::bench {

report::ResultRecord error_record(const Problem& p, const std::string& message, int gpu) {
  report::ResultRecord r;
  r.problem = p.id;
  r.level = p.level;
  r.status = "error";
  r.error = message;
  r.gpu = gpu;
  if (!p.sample.empty()) {  // bench --samples: the sample's own record, not the problem's
    r.sample = p.sample.filename().string();
    r.candidate = p.sample.string();
  }
  return r;
}

namespace {

// GpuBusyError says the verdict would have depended on another process: wait and try again.
std::optional<report::ResultRecord> run_when_gpu_free(ProblemJob& job, const Problem& p, int gpu,
                                                      const BatchOptions& o) {
  for (int attempt = 0;; ++attempt) {
    try {
      return job.run(p);
    } catch (const GpuBusyError& e) {
      if (attempt >= o.busy_retries) throw;
      const double wait_s = o.busy_wait_s * (1 << (2 * attempt));
      spdlog::warn("{} on GPU {}: the GPU is busy ({}); trying again in {:g} s", p.id, gpu, e.what(), wait_s);
      std::this_thread::sleep_for(std::chrono::duration<double>(wait_s));
    }
  }
}

}  // namespace

BatchOutcome run_batch(const std::vector<Problem>& problems, const BatchOptions& options, const JobFactory& make_job,
                       const BatchEvents& events, const std::atomic<bool>& stop) {
  // The queue's mutex guards outcome and the event callbacks too (they print and write files).
  WorkQueue queue(problems.size(), &stop);
  std::mutex& mu = queue.mutex();
  BatchOutcome outcome;

  auto worker = [&](int gpu) {
    using Clock = std::chrono::steady_clock;
    std::unique_ptr<ProblemJob> job;
    std::string job_error;
    int env_in_a_row = 0;
    for (;;) {
      const Problem* p = nullptr;
      std::vector<Problem> next;
      for (;;) {
        {
          std::lock_guard<std::mutex> lock(mu);
          // Builds run in the queue's order, so only its head can have ended out of turn.
          constexpr size_t kReadyWindow = 256;
          auto built = [&](size_t k) { return !options.ready || options.ready(problems[k]); };
          std::optional<size_t> i =
              options.ready ? queue.take_preferred_locked(built, kReadyWindow) : queue.take_locked();
          if (i) {
            p = &problems[*i];
            for (size_t n : queue.peek_locked(built, kReadyWindow, judge::kExpectAhead)) next.push_back(problems[n]);
            if (events.started) events.started(*p, gpu);
            break;
          }
          if (queue.done_locked()) return;
        }
        // None built yet: wait for a build to end, outside the queue's lock, and look again.
        if (options.wait_for_builds)
          options.wait_for_builds();
        else
          std::this_thread::sleep_for(std::chrono::milliseconds(50));
      }
      const auto t0 = Clock::now();
      std::optional<report::ResultRecord> rec;
      bool env_failed = false;
      try {
        if (!job) job = make_job(gpu);
        if (!next.empty()) job->expect(next);
        rec = run_when_gpu_free(*job, *p, gpu, options);
      } catch (const EnvError& e) {
        env_failed = true;
        job_error = e.what();
        rec = error_record(*p, std::string("environment: ") + e.what(), gpu);
        job.reset();  // its runner or reference server may be gone: start afresh
      } catch (const std::exception& e) {
        rec = error_record(*p, e.what(), gpu);
        job.reset();
      }
      std::lock_guard<std::mutex> lock(mu);
      if (!rec) {
        ++outcome.not_run;
        continue;
      }
      if (!rec->wall_s) rec->wall_s = std::chrono::duration<double>(Clock::now() - t0).count();
      if (!rec->gpu) rec->gpu = gpu;
      ++outcome.finished;
      if (events.finished) events.finished(*rec);
      env_in_a_row = env_failed ? env_in_a_row + 1 : 0;
      if (env_in_a_row >= options.max_env_failures_in_a_row) {
        ++outcome.workers_stopped;
        outcome.env_failure = fmt::format("GPU {}: {} problems in a row failed in the environment; last: {}", gpu,
                                          env_in_a_row, job_error);
        return;
      }
    }
  };

  run_workers(options.gpus, options.jobs_per_gpu, worker);
  outcome.not_run += static_cast<int>(problems.size() - queue.taken());
  return outcome;
}

}  // namespace kagent::bench
