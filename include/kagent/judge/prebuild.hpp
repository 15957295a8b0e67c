#pragma once
// The candidates' own work ahead of the GPU. While a GPU worker measures one candidate, a pool of CPU
// threads compiles the next ones (NVRTC, into the compile cache) and builds ModelNew solutions
// (load_inline and Triton, in a worker that has no GPU), so that each evaluation finds its build
// done and the GPU does not wait for a compiler. Nothing here touches a GPU, and nothing here
// decides a verdict: the evaluation compiles again (a cache hit) and reports whatever fails. The
// threads run at a lower CPU priority (nice 10, inherited by the compilers they start), so that a
// runner launching a timed plan keeps its core.
#include <chrono>
#include <condition_variable>
#include <deque>
#include <filesystem>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "kagent/compile/cache.hpp"
#include "kagent/compile/compiler.hpp"
#include "kagent/judge/backend.hpp"

namespace kagent::judge {

class Prebuilder {
 public:
  // `threads` 0: default_prebuild_threads(gpus). `arch`: the compile target of requests that name
  // none (the GPU's; default_arch()).
  Prebuilder(std::shared_ptr<CompileCache> cache, std::string arch, int threads);
  ~Prebuilder();  // work not started is dropped; work in progress is waited for
  Prebuilder(const Prebuilder&) = delete;
  Prebuilder& operator=(const Prebuilder&) = delete;

  // Queues the request's build, in submission order. The future is ready once it is done or has
  // failed (the evaluation then builds it itself). A request already queued or done is not built twice.
  std::shared_future<void> submit(const CandidateRequest& request);
  // Waits for the build of a request submitted earlier; returns at once for one never submitted.
  void wait_for(const CandidateRequest& request);
  // Whether a request's build is over (done, failed, or never submitted): it would not wait.
  bool ready(const CandidateRequest& request) const;
  // The first of `pending` (in its order) whose build is over, waiting until one is: so that a GPU
  // worker never idles while a candidate built out of turn waits. `pending` must not be empty.
  size_t first_ready(const std::vector<const CandidateRequest*>& pending) const;
  // Returns when a build ends, or after `at_most` (for a caller whose set of pending candidates
  // changes meanwhile: it looks again).
  void wait_for_progress(std::chrono::milliseconds at_most) const;

  int threads() const { return static_cast<int>(threads_.size()); }
  struct Stats {
    long built = 0;   // finished, whatever the outcome
    long failed = 0;  // threw (the evaluation will say why)
    // Seconds from the first build's start to the last one's end so far (0 before any ended).
    double span_s = 0;
  };
  Stats stats() const;

 private:
  struct Work {
    CandidateRequest request;
    std::promise<void> done;
  };
  void work();
  void build(const CandidateRequest& r);
  bool ready_locked(const std::string& key) const;  // ready(), with mu_ held

  std::unique_ptr<Compiler> compiler_;
  bool nvrtc_ = false;  // the CUDA toolkit was found (else plans are compiled by their evaluation alone)
  std::string arch_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  mutable std::condition_variable done_cv_;  // a build ended
  std::optional<std::chrono::steady_clock::time_point> first_start_;
  std::deque<Work> queue_;
  std::map<std::string, std::shared_future<void>> submitted_;  // by request_key
  bool stopping_ = false;
  Stats stats_;
  std::vector<std::thread> threads_;
};

// The machine's hardware threads less two per GPU worker (its own thread and its runner), at least one.
int default_prebuild_threads(int gpu_workers);

// Where a request's candidate given as text is written: one file per text (named by its hash, so a
// prebuild and the evaluation name it alike, and the compile cache's key matches), under a folder
// of this process's that is removed when it exits.
std::filesystem::path text_candidate_path(const CandidateRequest& request);

// The candidate of a request: its file, or its text written at text_candidate_path().
Candidate candidate_of_request(const CandidateRequest& request);

}  // namespace kagent::judge
