#pragma once
// Work for a candidate done before its turn, while the evaluator measures another one: a ModelNew
// worker's start (python3, torch, the profiler's CUPTI and CUDA context), seconds that belong to no
// candidate and run none of its code. The front ends that know what comes next (kagent eval with
// several candidates, bench --samples, serve) say so (Evaluator::expect); the kind decides what
// can be started (CandidateKind::start_ahead) and its evaluation takes it (EvalContext::take_ahead).
//
// A few helper threads per evaluator do the work (a worker's start takes seconds, several times an
// evaluation of a small problem, so several start at once): a child process started on one is tied
// to that thread (ChildClient: PR_SET_PDEATHSIG fires when the starting thread exits), and the
// threads live as long as the evaluator.
#include <condition_variable>
#include <deque>
#include <filesystem>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace kagent {

// What a kind started ahead for one candidate; the candidate's evaluation takes it.
class AheadWork {
 public:
  virtual ~AheadWork() = default;
};

// The evaluator's settings a kind needs to start something that its evaluation can use as is.
struct AheadOptions {
  int gpu = 0;
  std::string arch;                // the compile target
  std::filesystem::path exec_dir;  // where kagent-runner and kagent-sandbox-exec are
};

class AheadSlot {
 public:
  AheadSlot();
  ~AheadSlot();  // waits for the job under way, discards what was not taken, ends the thread
  AheadSlot(const AheadSlot&) = delete;
  AheadSlot& operator=(const AheadSlot&) = delete;

  // Jobs at once, and how many candidates' work is held at most (the one about to be evaluated,
  // announced while the one before it was measured, and those after it).
  static constexpr size_t kThreads = 4;
  static constexpr size_t kHeld = 8;

  // Runs `make` on a helper thread for the candidate named `key` until `count` works of that key are
  // held (the same solution announced three times gets three: each evaluation takes one, and a
  // worker serves one evaluation). The oldest work not taken is discarded when more than kHeld would
  // be held.
  void start(const std::string& key, std::function<std::unique_ptr<AheadWork>()> make, size_t count = 1);
  // The oldest work started for `key`, waiting for it to finish; null when none was started for it or
  // it failed (the evaluation then does it itself, and reports what fails). Other work stays.
  std::unique_ptr<AheadWork> take(const std::string& key);
  // The keys whose work is held, oldest first (a key once per work).
  std::vector<std::string> held() const;

 private:
  using Result = std::future<std::unique_ptr<AheadWork>>;
  void run();
  void discard_locked(Result r);  // dropped by a helper thread, once the job that makes it is over

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::packaged_task<std::unique_ptr<AheadWork>()>> jobs_;
  std::deque<std::pair<std::string, Result>> held_;  // by candidate, oldest first: done or under way
  bool closing_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace kagent
