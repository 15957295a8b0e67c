#include "kagent/serve/eval_queue.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "kagent/common/error.hpp"
#include "kagent/judge/verdict.hpp"

namespace kagent::serve {

using Clock = std::chrono::steady_clock;

nlohmann::json error_body(int status, const std::string& message, const std::string& field) {
  nlohmann::json e = {{"status", status}, {"message", message}};
  if (!field.empty()) e["field"] = field;
  return {{"error", e}};
}

EvalQueue::EvalQueue(Options options, judge::BackendFactory backends, Metrics* metrics)
    : options_(std::move(options)),
      backends_(std::move(backends)),
      metrics_(metrics),
      policy_(options_.gpus.size(), options_.affinity),
      warm_(options_.gpus.size()) {
  for (size_t slot = 0; slot < options_.gpus.size(); ++slot) workers_.emplace_back([this, slot] { work(slot); });
}

EvalQueue::~EvalQueue() {
  stop();
}

void EvalQueue::stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_ && workers_.empty()) return;
    stopping_ = true;
    for (Job& j : queue_) answer_locked(j, answer_of(503, error_body(503, "the service is stopping")), false);
    queue_.clear();
    bytes_ = 0;
  }
  cv_.notify_all();
  for (auto& t : workers_)
    if (t.joinable()) t.join();
  workers_.clear();
}

std::optional<std::vector<std::future<Answer>>> EvalQueue::submit(std::vector<judge::CandidateRequest> requests,
                                                                  Refusal* why) {
  auto promises = std::make_shared<std::vector<std::promise<Answer>>>(requests.size());
  std::vector<std::future<Answer>> futures;
  for (auto& p : *promises) futures.push_back(p.get_future());
  if (!submit(
          std::move(requests), [promises](size_t i, Answer a) { (*promises)[i].set_value(std::move(a)); }, why))
    return std::nullopt;
  return futures;
}

bool EvalQueue::submit(std::vector<judge::CandidateRequest> requests, OnAnswer on_answer, Refusal* why) {
  return admit(std::move(requests), std::move(on_answer), why, nullptr);
}

std::optional<std::future<Answer>> EvalQueue::run_task(judge::CandidateRequest request, Task task, Refusal* why) {
  auto promise = std::make_shared<std::promise<Answer>>();
  std::future<Answer> future = promise->get_future();
  std::vector<judge::CandidateRequest> one;
  one.push_back(std::move(request));
  if (!admit(
          std::move(one), [promise](size_t, Answer a) { promise->set_value(std::move(a)); }, why,
          std::make_shared<const Task>(std::move(task))))
    return std::nullopt;
  return future;
}

bool EvalQueue::admit(std::vector<judge::CandidateRequest> requests, OnAnswer on_answer, Refusal* why,
                      std::shared_ptr<const Task> task) {
  Refusal refusal = Refusal::none;
  if (why == nullptr) why = &refusal;
  size_t bytes = 0;
  for (const auto& r : requests) bytes += r.source.size();
  auto shared_on_answer = std::make_shared<OnAnswer>(std::move(on_answer));
  {
    std::lock_guard<std::mutex> lock(mu_);
    *why = stopping_                                             ? Refusal::stopping
           : queue_.size() + requests.size() > options_.capacity ? Refusal::full
           : bytes_ + bytes > options_.capacity_bytes            ? Refusal::bytes
                                                                 : Refusal::none;
    if (*why != Refusal::none) return false;
    const auto now = Clock::now();
    auto batch = std::make_shared<Batch>();
    batch->total = batch->queued = requests.size();
    ++batches_;
    in_flight_.queued += requests.size();
    bytes_ += bytes;
    for (size_t i = 0; i < requests.size(); ++i) {
      Job j;
      j.id = next_id_++;
      j.problem = policy_.problem_id(judge::problem_key(requests[i].problem));
      // Built while it waits, and known to the prebuilder before a worker can see it.
      if (options_.prebuilder && !task) j.built = options_.prebuilder->submit(requests[i]);
      j.task = task;
      j.request = std::move(requests[i]);
      j.admitted = now;
      j.batch = batch;
      j.index = i;
      j.on_answer = shared_on_answer;
      queue_.push_back(std::move(j));
    }
  }
  cv_.notify_all();
  return true;
}

bool EvalQueue::stopping() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stopping_;
}

size_t EvalQueue::depth() const {
  std::lock_guard<std::mutex> lock(mu_);
  return queue_.size();
}

QueueState EvalQueue::state() const {
  std::lock_guard<std::mutex> lock(mu_);
  QueueState s;
  s.depth = queue_.size();
  s.capacity = options_.capacity;
  s.bytes = bytes_;
  s.capacity_bytes = options_.capacity_bytes;
  s.batches = batches_;
  s.batch_queued = in_flight_.queued;
  s.batch_running = in_flight_.running;
  s.batch_done = in_flight_.done;
  s.warm_limit = options_.warm.max_problems;
  s.warm_memory_share = options_.warm.memory_share;
  s.warm_spares = options_.warm.spares;
  for (size_t slot = 0; slot < warm_.size(); ++slot) {
    const WorkerWarm& w = warm_[slot];
    if (w.last.limit > 0) {  // the backend's own word over what it was told
      s.warm_limit = w.last.limit;
      s.warm_memory_share = w.last.memory_share;
    }
    GpuWarm g;
    g.gpu = options_.gpus[slot];
    g.problems = w.last.problems.size();
    g.gpu_bytes = w.last.gpu_bytes;
    g.host_bytes = w.last.host_bytes;
    g.started_ahead = w.started_ahead + w.last.started_ahead;
    g.started_in_turn = w.started_in_turn + (w.last.started - w.last.started_ahead);
    g.evicted = w.evicted + w.last.evicted;
    g.spares = w.last.spares;
    g.spares_used = w.spares_used + w.last.spares_used;
    s.gpus.push_back(g);
  }
  return s;
}

int EvalQueue::retry_after_s() const {
  std::lock_guard<std::mutex> lock(mu_);
  const double workers = std::max<double>(1, static_cast<double>(options_.gpus.size()));
  const double s = std::ceil(static_cast<double>(queue_.size() + 1) * mean_eval_s_ / workers);
  return static_cast<int>(std::clamp(s, 1.0, 600.0));
}

std::vector<judge::QueuedRequest> EvalQueue::view_locked() {
  std::vector<judge::QueuedRequest> view;
  const size_t n = std::min(queue_.size(), options_.affinity.window);
  view.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    Job& j = queue_[i];
    if (!j.ready) j.ready = !j.built.valid() || j.built.wait_for(std::chrono::seconds(0)) == std::future_status::ready;
    view.push_back({j.id, j.problem, j.ready});
  }
  return view;
}

void EvalQueue::answer_locked(Job& job, Answer answer, bool taken) {
  Batch& b = *job.batch;
  if (taken) {
    --b.running;
    --in_flight_.running;
  } else {
    --b.queued;
    --in_flight_.queued;
  }
  ++b.done;
  ++in_flight_.done;
  if (b.done == b.total) {  // wholly answered: out of the sums
    in_flight_.done -= b.total;
    --batches_;
  }
  (*job.on_answer)(job.index, std::move(answer));
}

void EvalQueue::warm_locked(size_t slot, const std::optional<judge::WarmState>& state) {
  WorkerWarm& w = warm_[slot];
  if (state) {
    w.last = *state;
    policy_.set_warm(slot, *state);
    return;
  }
  // Dropped: its counters stay counted, and nothing is warm until the next backend says.
  w.started_ahead += w.last.started_ahead;
  w.started_in_turn += w.last.started - w.last.started_ahead;
  w.evicted += w.last.evicted;
  w.spares_used += w.last.spares_used;
  w.last = {};
  policy_.forget(slot);
}

Answer EvalQueue::evaluate(judge::EvalBackend& backend, std::unique_ptr<judge::EvalBackend>& owner, const Job& job,
                           std::string* outcome) {
  try {
    if (job.task) {
      *outcome = "task";
      return answer_of(200, (*job.task)(backend), 0);
    }
    if (job.request.want_report) {
      auto report = std::make_shared<const EvalReport>(backend.evaluate_report(job.request));
      nlohmann::json record = judge::record_of_report(*report, job.request);
      try {
        *outcome = judge::verdict_of(record).status;
      } catch (const InputError&) {
        *outcome = "error";
      }
      Answer a = answer_of(200, std::move(record));
      a.report = std::move(report);
      return a;
    }
    nlohmann::json record = backend.evaluate(job.request);
    try {
      *outcome = judge::verdict_of(record).status;
    } catch (const InputError&) {
      *outcome = "error";
    }
    return answer_of(200, std::move(record), 0);
  } catch (const GpuBusyError& e) {
    *outcome = "unavailable";
    return answer_of(503, error_body(503, fmt::format("the GPU is busy with another process: {}", e.what())), 30);
  } catch (const EnvError& e) {
    *outcome = "unavailable";
    owner.reset();  // its children may be gone: the next evaluation starts afresh
    return answer_of(503, error_body(503, e.what()), 0);
  } catch (const InputError& e) {
    // The problem (its file fails to load) or a plan that does not fit it: the request's own.
    *outcome = "rejected";
    return answer_of(422, error_body(422, e.what()), 0);
  } catch (const std::exception& e) {
    *outcome = "error";
    owner.reset();
    spdlog::error("evaluation of {} failed: {}", job.request.name, e.what());
    return answer_of(500, error_body(500, fmt::format("internal error: {}", e.what())), 0);
  }
}

void EvalQueue::work(size_t slot) {
  const int gpu = options_.gpus[slot];
  std::unique_ptr<judge::EvalBackend> backend;
  for (;;) {
    Job job;
    judge::Pick pick;
    std::vector<judge::CandidateRequest> next;
    Clock::time_point taken;
    {
      std::unique_lock<std::mutex> lock(mu_);
      std::vector<judge::QueuedRequest> view;
      for (;;) {
        if (stopping_) return;
        if (queue_.empty()) {
          cv_.wait(lock);
          continue;
        }
        view = view_locked();
        pick = policy_.pick(slot, view);
        if (pick.index) break;
        if (pick.any_ready || !options_.prebuilder) {
          // What is ready is warm on busy workers whose queued work is shorter than a cold start:
          // wait for a change (a worker ends one, a request comes), or look again soon.
          cv_.wait_for(lock, std::chrono::milliseconds(100));
          continue;
        }
        // Nothing built yet: wait for a build to end, outside the lock, and look again.
        lock.unlock();
        options_.prebuilder->wait_for_progress(std::chrono::milliseconds(50));
        lock.lock();
      }
      const auto at = static_cast<std::ptrdiff_t>(*pick.index);
      job = std::move(queue_[*pick.index]);
      queue_.erase(queue_.begin() + at);
      view.erase(view.begin() + at);
      bytes_ -= job.request.source.size();
      --job.batch->queued;
      ++job.batch->running;
      --in_flight_.queued;
      ++in_flight_.running;
      taken = Clock::now();
      // The likely next jobs of this worker: a hint for its backend, which starts their problems.
      for (size_t k : policy_.likely_next(slot, view)) next.push_back(queue_[k].request);
    }
    metrics_->pick(judge::pick_rule_name(pick.rule));
    // Over already (it was picked ready); this also lets the prebuilder forget it.
    if (options_.prebuilder && !job.task) options_.prebuilder->wait_for(job.request);
    const auto start = Clock::now();
    const double waited_s = std::chrono::duration<double>(start - job.admitted).count();
    const double limit_s = options_.max_wait_s;
    Answer answer;
    std::string outcome;
    if (waited_s > limit_s) {
      outcome = "expired";
      answer = answer_of(
          504,
          error_body(504, fmt::format("waited {:.1f} s for a GPU, past the service's --queue-timeout {:g} s: not "
                                      "evaluated",
                                      waited_s, limit_s)),
          0);
      std::lock_guard<std::mutex> lock(mu_);
      metrics_->evaluation(outcome, waited_s);
      answer_locked(job, std::move(answer), true);
      continue;
    }
    try {
      if (!backend) backend = backends_(gpu);
      if (!next.empty()) backend->expect(next);
      answer = evaluate(*backend, backend, job, &outcome);
    } catch (const std::exception& e) {  // the factory itself
      outcome = "error";
      answer = answer_of(500, error_body(500, fmt::format("internal error: {}", e.what())), 0);
    }
    const double busy_s = std::chrono::duration<double>(Clock::now() - start).count();
    metrics_->gpu_busy(gpu, busy_s);
    // What the backend holds now, asked on its own thread between requests.
    std::optional<judge::WarmState> warm;
    if (backend) warm = backend->warm();
    if (answer.status == 200 && answer.body.is_object())
      answer.body["serve"] = {{"gpu", gpu},
                              {"queued_s", std::chrono::duration<double>(taken - job.admitted).count()},
                              {"evaluated_s", busy_s},
                              {"problem", pick.warm ? "warm" : "cold"}};
    {
      std::lock_guard<std::mutex> lock(mu_);
      ++evaluated_;
      mean_eval_s_ += (busy_s - mean_eval_s_) / static_cast<double>(evaluated_);
      policy_.evaluated(busy_s, pick.warm);
      warm_locked(slot, warm);
      if (!job.task) metrics_->evaluation(outcome, std::chrono::duration<double>(Clock::now() - job.admitted).count());
      answer_locked(job, std::move(answer), true);
    }
    cv_.notify_all();  // its warm problems changed: a worker waiting for them looks again
  }
}

}  // namespace kagent::serve
