#include "kagent/bench/batch.hpp"

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <thread>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "kagent/common/error.hpp"
#include "kagent/common/worker_pool.hpp"
#include "kagent/judge/affinity.hpp"
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

// The key the affinity policy knows a problem by: its file's (judge::problem_key), as the backend
// reports it warm; a problem without a file (a test's) by its id.
std::string affinity_key(const Problem& p) {
  return p.path.empty() ? "id:" + p.id : judge::problem_key(p.path);
}

}  // namespace

BatchOutcome run_batch(const std::vector<Problem>& problems, const BatchOptions& options, const JobFactory& make_job,
                       const BatchEvents& events, const std::atomic<bool>& stop) {
  // The queue's mutex guards outcome, the policy and the event callbacks too (they print and write files).
  WorkQueue queue(problems.size(), &stop);
  std::mutex& mu = queue.mutex();
  std::condition_variable changed;  // a worker ended a problem or stopped: one waiting looks again
  BatchOutcome outcome;
  judge::AffinityPolicy policy(options.gpus.size() * static_cast<size_t>(std::max(1, options.jobs_per_gpu)));
  std::vector<std::string> keys;
  std::vector<judge::ProblemId> problem_of;
  for (const Problem& p : problems) {
    keys.push_back(affinity_key(p));
    problem_of.push_back(policy.problem_id(keys.back()));
  }
  // A build once over stays over: asked again only for those not yet seen built.
  std::vector<char> built(problems.size(), options.ready ? 0 : 1);
  std::atomic<size_t> slots{0};

  auto worker = [&](int gpu) {
    using Clock = std::chrono::steady_clock;
    const size_t slot = slots++;  // this worker's place in the policy
    std::unique_ptr<ProblemJob> job;
    std::string job_error;
    int env_in_a_row = 0;
    // Leaving: it holds nothing any more, and a worker waiting for its problems looks again.
    auto leave = [&] {
      policy.forget(slot);
      changed.notify_all();
    };
    for (;;) {
      const Problem* p = nullptr;
      judge::Pick pick;
      std::vector<Problem> next;
      {
        std::unique_lock<std::mutex> lock(mu);
        for (;;) {
          if (queue.done_locked()) {
            leave();
            return;
          }
          std::vector<size_t> items = queue.pending_locked(policy.options().window);
          std::vector<judge::QueuedRequest> view;
          for (size_t i : items) {
            if (!built[i] && options.ready(problems[i])) built[i] = 1;
            view.push_back({i, problem_of[i], built[i] != 0});
          }
          pick = policy.pick(slot, view);
          if (pick.index) {
            const auto at = static_cast<std::ptrdiff_t>(*pick.index);
            queue.take_item_locked(items[*pick.index]);
            p = &problems[items[*pick.index]];
            items.erase(items.begin() + at);
            view.erase(view.begin() + at);
            for (size_t k : policy.likely_next(slot, view)) next.push_back(problems[items[k]]);
            if (events.started) events.started(*p, gpu);
            break;
          }
          if (pick.any_ready) {
            // Its problems are warm on busy workers whose queued work is shorter than a cold
            // start: wait for one of them to end a problem, and look again.
            changed.wait_for(lock, std::chrono::milliseconds(100));
            continue;
          }
          // None built yet: wait for a build to end, outside the queue's lock, and look again.
          lock.unlock();
          if (options.wait_for_builds)
            options.wait_for_builds();
          else
            std::this_thread::sleep_for(std::chrono::milliseconds(50));
          lock.lock();
        }
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
      const double took_s = std::chrono::duration<double>(Clock::now() - t0).count();
      std::optional<judge::WarmState> warm;
      if (job) {
        warm = job->warm();
        if (!warm) {
          warm.emplace();
          warm->current = keys[static_cast<size_t>(p - problems.data())];
        }
      }
      std::lock_guard<std::mutex> lock(mu);
      policy.evaluated(took_s, pick.warm);
      if (warm)
        policy.set_warm(slot, *warm);
      else
        policy.forget(slot);
      changed.notify_all();
      if (!rec) {
        ++outcome.not_run;
        continue;
      }
      if (!rec->wall_s) rec->wall_s = took_s;
      if (!rec->gpu) rec->gpu = gpu;
      ++outcome.finished;
      if (events.finished) events.finished(*rec);
      env_in_a_row = env_failed ? env_in_a_row + 1 : 0;
      if (env_in_a_row >= options.max_env_failures_in_a_row) {
        ++outcome.workers_stopped;
        outcome.env_failure = fmt::format("GPU {}: {} problems in a row failed in the environment; last: {}", gpu,
                                          env_in_a_row, job_error);
        leave();
        return;
      }
    }
  };

  run_workers(options.gpus, options.jobs_per_gpu, worker);
  outcome.not_run += static_cast<int>(problems.size() - queue.taken());
  return outcome;
}

}  // namespace kagent::bench
