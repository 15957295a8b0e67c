#pragma once
// The service's work: a bounded queue of evaluations and one worker thread per GPU, each owning
// the backend it made (judge/backend.hpp) and evaluating one candidate at a time, so that no two
// timings share a GPU. A request is admitted whole (a batch: all its candidates or none) or
// refused at once when the queue lacks room for it, in requests or in bytes of sources (HTTP 429);
// each evaluation's answer comes back through a future. Workers take requests by the judge's
// affinity policy (judge/affinity.hpp): a problem's requests go to a worker that has it warm, and
// each worker announces what it likely takes next to its backend, which starts those problems
// ahead. A candidate that crashes, hangs or cheats fails its own evaluation (the backend runs it in
// sandboxed children); an exception of the backend becomes that request's answer, and the worker
// makes a fresh backend for the next.
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "kagent/eval/warm_limits.hpp"
#include "kagent/judge/affinity.hpp"
#include "kagent/judge/backend.hpp"
#include "kagent/judge/prebuild.hpp"
#include "kagent/serve/metrics.hpp"

namespace kagent::serve {

// An HTTP answer: the status and its JSON body (a record, or {"error": {...}}).
struct Answer {
  int status = 200;
  nlohmann::json body;
  int retry_after_s = 0;  // > 0: say Retry-After (429, 503 when the GPU was busy)
  // The evaluation's report itself, for a request that asked for it (CandidateRequest::want_report).
  std::shared_ptr<const EvalReport> report;
};

inline Answer answer_of(int status, nlohmann::json body, int retry_after_s = 0) {
  Answer a;
  a.status = status;
  a.body = std::move(body);
  a.retry_after_s = retry_after_s;
  return a;
}

// {"error": {"status": S, "field": F (when given), "message": M}}.
nlohmann::json error_body(int status, const std::string& message, const std::string& field = "");

class EvalQueue {
 public:
  struct Options {
    std::vector<int> gpus = {0};  // a worker each
    // Evaluations waiting (not counting those being evaluated): four trainer steps of 1024.
    size_t capacity = 4096;
    // Bytes of the waiting requests' sources: what bounds the queue's memory (a request's other
    // fields are small).
    size_t capacity_bytes = size_t{512} << 20;
    // A request that waits longer for a worker is answered 504, unevaluated: its client has
    // likely given up, and the GPU time is better spent on requests still awaited.
    double max_wait_s = 600;
    // Compiles and builds admitted candidates while they wait (null: each in its worker's turn).
    judge::Prebuilder* prebuilder = nullptr;
    // What the backends were told to keep warm: reported until a backend says.
    WarmLimits warm;
    judge::AffinityOptions affinity;
  };
  // Why submit() admitted nothing.
  enum class Refusal { none, stopping, full, bytes };

  EvalQueue(Options options, judge::BackendFactory backends, Metrics* metrics);
  ~EvalQueue();  // stop()
  EvalQueue(const EvalQueue&) = delete;
  EvalQueue& operator=(const EvalQueue&) = delete;

  // Admits every request, or none (nullopt, `why` says which bound it met). A request that waits
  // longer than Options::max_wait_s before a worker takes it is answered 504 unevaluated. An
  // answered record carries "serve": {"gpu", "queued_s", "evaluated_s", "problem": "warm"|"cold"}.
  std::optional<std::vector<std::future<Answer>>> submit(std::vector<judge::CandidateRequest> requests,
                                                         Refusal* why = nullptr);
  // The same, each answer given to `on_answer` with its request's index instead of a future: so a
  // waiting request holds no thread. It is called once per request, on a worker's thread (or the
  // one calling stop()) with the queue's lock held: it must be quick and must not call the queue.
  using OnAnswer = std::function<void(size_t index, Answer answer)>;
  bool submit(std::vector<judge::CandidateRequest> requests, OnAnswer on_answer, Refusal* why = nullptr);

  // Runs `task` on a worker in turn with the evaluations, as a job of `request`'s problem (the
  // affinity policy sends it where that problem is warm): work that needs a worker's GPU and its
  // backend, such as resolving a problem and timing its baselines for a session's task text
  // (serve/sessions.cpp). Its JSON is the answer's body (200); its exceptions are answered as an
  // evaluation's are. Not counted among the evaluations.
  using Task = std::function<nlohmann::json(judge::EvalBackend& backend)>;
  std::optional<std::future<Answer>> run_task(judge::CandidateRequest request, Task task, Refusal* why = nullptr);

  size_t depth() const;
  size_t capacity() const { return options_.capacity; }
  size_t capacity_bytes() const { return options_.capacity_bytes; }
  // The queue, the batches in flight and each GPU's warm problems, as of now.
  QueueState state() const;
  // When a refused client should try again: the queue's work at the mean evaluation time so far
  // over the workers, 1 s to 10 min.
  int retry_after_s() const;
  // The workers finish their evaluation in progress; requests still waiting are answered 503.
  void stop();
  bool stopping() const;

 private:
  // The progress of one admitted batch; a job's answer ends its part.
  struct Batch {
    size_t total = 0, queued = 0, running = 0, done = 0;
  };
  struct Job {
    uint64_t id = 0;
    judge::CandidateRequest request;
    judge::ProblemId problem = 0;
    std::shared_future<void> built;  // from the prebuilder; invalid: nothing to wait for
    bool ready = false;              // its build was seen over (it stays over)
    size_t index = 0;                // in its request
    std::shared_ptr<OnAnswer> on_answer;
    std::shared_ptr<const Task> task;  // run_task's, instead of an evaluation
    std::chrono::steady_clock::time_point admitted;
    std::shared_ptr<Batch> batch;
  };
  // A worker's warm problems as last reported, and the counters of the backends it dropped.
  struct WorkerWarm {
    judge::WarmState last;
    long started_ahead = 0, started_in_turn = 0, evicted = 0, spares_used = 0;
  };
  bool admit(std::vector<judge::CandidateRequest> requests, OnAnswer on_answer, Refusal* why,
             std::shared_ptr<const Task> task);
  void work(size_t slot);
  Answer evaluate(judge::EvalBackend& backend, std::unique_ptr<judge::EvalBackend>& owner, const Job& job,
                  std::string* outcome);
  std::vector<judge::QueuedRequest> view_locked();
  // Its batch's progress, then the answer; `taken`: by a worker (else still queued: stopping).
  void answer_locked(Job& job, Answer answer, bool taken);
  // A worker's backend reported `state` after an evaluation; nullopt: it was dropped.
  void warm_locked(size_t slot, const std::optional<judge::WarmState>& state);

  Options options_;
  judge::BackendFactory backends_;
  Metrics* metrics_;
  mutable std::mutex mu_;
  std::condition_variable cv_;  // a job admitted, a worker ended one, or stopping
  std::deque<Job> queue_;
  size_t bytes_ = 0;  // of the queued jobs' sources
  uint64_t next_id_ = 0;
  judge::AffinityPolicy policy_;
  std::vector<WorkerWarm> warm_;  // by worker
  size_t batches_ = 0;
  Batch in_flight_;  // the sums over the batches in flight
  bool stopping_ = false;
  double mean_eval_s_ = 1.0;  // running mean of the evaluations' seconds (1 s before the first)
  long evaluated_ = 0;
  std::vector<std::thread> workers_;
};

}  // namespace kagent::serve
