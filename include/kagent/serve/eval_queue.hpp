#pragma once
// The service's work: a bounded queue of evaluations and one worker thread per GPU, each owning
// the backend it made (judge/backend.hpp) and evaluating one candidate at a time, so that no two
// timings share a GPU. A request is admitted whole (a batch: all its candidates or none) or
// refused at once when the queue is full (HTTP 429); each evaluation's answer comes back through
// a future. A candidate that crashes, hangs or cheats fails its own evaluation (the backend runs it
// in sandboxed children); an exception of the backend becomes that request's answer, and the
// worker makes a fresh backend for the next.
#include <chrono>
#include <condition_variable>
#include <deque>
#include <future>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "kagent/judge/backend.hpp"
#include "kagent/judge/prebuild.hpp"
#include "kagent/serve/metrics.hpp"

namespace kagent::serve {

// An HTTP answer: the status and its JSON body (a record, or {"error": {...}}).
struct Answer {
  int status = 200;
  nlohmann::json body;
  int retry_after_s = 0;  // > 0: say Retry-After (429, 503 when the GPU was busy)
};

// {"error": {"status": S, "field": F (when given), "message": M}}.
nlohmann::json error_body(int status, const std::string& message, const std::string& field = "");

class EvalQueue {
 public:
  struct Options {
    std::vector<int> gpus = {0};  // a worker each
    size_t capacity = 64;         // evaluations waiting (not counting those being evaluated)
    // A request that waits longer for a worker is answered 504, unevaluated: its client has
    // likely given up, and the GPU time is better spent on requests still awaited.
    double max_wait_s = 600;
    // Compiles and builds admitted candidates while they wait (null: each in its worker's turn).
    judge::Prebuilder* prebuilder = nullptr;
  };
  EvalQueue(Options options, judge::BackendFactory backends, Metrics* metrics);
  ~EvalQueue();  // stop()
  EvalQueue(const EvalQueue&) = delete;
  EvalQueue& operator=(const EvalQueue&) = delete;

  // Admits every request, or none (nullopt: the queue lacks room for them all). A request that
  // waits longer than Options::max_wait_s before a worker takes it is answered 504 unevaluated.
  std::optional<std::vector<std::future<Answer>>> submit(std::vector<judge::CandidateRequest> requests);

  size_t depth() const;
  size_t capacity() const { return options_.capacity; }
  // When a refused client should try again: the queue's work at the mean evaluation time so far
  // over the workers, 1 s to 10 min.
  int retry_after_s() const;
  // The workers finish their evaluation in progress; requests still waiting are answered 503.
  void stop();
  bool stopping() const;

 private:
  struct Job {
    judge::CandidateRequest request;
    std::promise<Answer> answer;
    std::chrono::steady_clock::time_point admitted;
  };
  void work(int gpu);
  Answer evaluate(judge::EvalBackend& backend, std::unique_ptr<judge::EvalBackend>& owner, const Job& job,
                  std::string* outcome);

  Options options_;
  judge::BackendFactory backends_;
  Metrics* metrics_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Job> queue_;
  bool stopping_ = false;
  double mean_eval_s_ = 1.0;  // running mean of the evaluations' seconds (1 s before the first)
  long evaluated_ = 0;
  std::vector<std::thread> workers_;
};

}  // namespace kagent::serve
