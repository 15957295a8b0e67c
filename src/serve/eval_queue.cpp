#include "kagent/serve/eval_queue.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "kagent/common/error.hpp"
#include "kagent/judge/prebuild.hpp"
#include "kagent/judge/verdict.hpp"

namespace kagent::serve {

using Clock = std::chrono::steady_clock;

nlohmann::json error_body(int status, const std::string& message, const std::string& field) {
  nlohmann::json e = {{"status", status}, {"message", message}};
  if (!field.empty()) e["field"] = field;
  return {{"error", e}};
}

EvalQueue::EvalQueue(Options options, judge::BackendFactory backends, Metrics* metrics)
    : options_(std::move(options)), backends_(std::move(backends)), metrics_(metrics) {
  for (int gpu : options_.gpus) workers_.emplace_back([this, gpu] { work(gpu); });
}

EvalQueue::~EvalQueue() {
  stop();
}

void EvalQueue::stop() {
  std::deque<Job> left;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_ && workers_.empty()) return;
    stopping_ = true;
    left.swap(queue_);
  }
  cv_.notify_all();
  for (Job& j : left) j.answer.set_value({503, error_body(503, "the service is stopping"), 0});
  for (auto& t : workers_)
    if (t.joinable()) t.join();
  workers_.clear();
}

std::optional<std::vector<std::future<Answer>>> EvalQueue::submit(std::vector<judge::CandidateRequest> requests) {
  std::vector<std::future<Answer>> futures;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_ || queue_.size() + requests.size() > options_.capacity) return std::nullopt;
    const auto now = Clock::now();
    for (auto& r : requests) {
      Job j;
      // Built while it waits, and known to the prebuilder before a worker can see it (a request it
      // never got counts as built).
      if (options_.prebuilder) options_.prebuilder->submit(r);
      j.request = std::move(r);
      j.admitted = now;
      futures.push_back(j.answer.get_future());
      queue_.push_back(std::move(j));
    }
  }
  cv_.notify_all();
  return futures;
}

bool EvalQueue::stopping() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stopping_;
}

size_t EvalQueue::depth() const {
  std::lock_guard<std::mutex> lock(mu_);
  return queue_.size();
}

int EvalQueue::retry_after_s() const {
  std::lock_guard<std::mutex> lock(mu_);
  const double workers = std::max<double>(1, static_cast<double>(options_.gpus.size()));
  const double s = std::ceil(static_cast<double>(queue_.size() + 1) * mean_eval_s_ / workers);
  return static_cast<int>(std::clamp(s, 1.0, 600.0));
}

Answer EvalQueue::evaluate(judge::EvalBackend& backend, std::unique_ptr<judge::EvalBackend>& owner, const Job& job,
                           std::string* outcome) {
  try {
    nlohmann::json record = backend.evaluate(job.request);
    try {
      *outcome = judge::verdict_of(record).status;
    } catch (const InputError&) {
      *outcome = "error";
    }
    return {200, std::move(record), 0};
  } catch (const GpuBusyError& e) {
    *outcome = "unavailable";
    return {503, error_body(503, fmt::format("the GPU is busy with another process: {}", e.what())), 30};
  } catch (const EnvError& e) {
    *outcome = "unavailable";
    owner.reset();  // its children may be gone: the next evaluation starts afresh
    return {503, error_body(503, e.what()), 0};
  } catch (const InputError& e) {
    // The problem (its file fails to load) or a plan that does not fit it: the request's own.
    *outcome = "rejected";
    return {422, error_body(422, e.what()), 0};
  } catch (const std::exception& e) {
    *outcome = "error";
    owner.reset();
    spdlog::error("evaluation of {} failed: {}", job.request.name, e.what());
    return {500, error_body(500, fmt::format("internal error: {}", e.what())), 0};
  }
}

void EvalQueue::work(int gpu) {
  std::unique_ptr<judge::EvalBackend> backend;
  for (;;) {
    Job job;
    std::vector<judge::CandidateRequest> next;
    for (bool taken = false; !taken;) {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
      if (stopping_) return;
      // The first job whose build is over: a candidate built out of turn does not wait behind one
      // still building. While none is, wait for a build to end (or a new job) and look again.
      auto pick = queue_.begin();
      if (options_.prebuilder) {
        while (pick != queue_.end() && !options_.prebuilder->ready(pick->request)) ++pick;
        if (pick == queue_.end()) {
          lock.unlock();
          options_.prebuilder->wait_for_progress(std::chrono::milliseconds(50));
          continue;
        }
      }
      job = std::move(*pick);
      queue_.erase(pick);
      taken = true;
      // The likely next jobs of this worker: a hint for its backend.
      std::vector<const judge::CandidateRequest*> queued;
      for (const Job& j : queue_) queued.push_back(&j.request);
      next = judge::likely_next(queued, options_.prebuilder);
    }
    if (options_.prebuilder) options_.prebuilder->wait_for(job.request);  // not GPU time: before `start`
    const auto start = Clock::now();
    const double waited_s = std::chrono::duration<double>(start - job.admitted).count();
    const double limit_s = options_.max_wait_s;
    Answer answer;
    std::string outcome;
    if (waited_s > limit_s) {
      outcome = "expired";
      answer = {504,
                error_body(504, fmt::format("waited {:.1f} s for a GPU, past the service's --queue-timeout {:g} s: not "
                                            "evaluated",
                                            waited_s, limit_s)),
                0};
    } else {
      try {
        if (!backend) backend = backends_(gpu);
        if (!next.empty()) backend->expect(next);
        answer = evaluate(*backend, backend, job, &outcome);
      } catch (const std::exception& e) {  // the factory itself
        outcome = "error";
        answer = {500, error_body(500, fmt::format("internal error: {}", e.what())), 0};
      }
      const double busy_s = std::chrono::duration<double>(Clock::now() - start).count();
      metrics_->gpu_busy(gpu, busy_s);
      std::lock_guard<std::mutex> lock(mu_);
      ++evaluated_;
      mean_eval_s_ += (busy_s - mean_eval_s_) / static_cast<double>(evaluated_);
    }
    metrics_->evaluation(outcome, std::chrono::duration<double>(Clock::now() - job.admitted).count());
    job.answer.set_value(std::move(answer));
  }
}

}  // namespace kagent::serve
