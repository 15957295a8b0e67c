#pragma once
// What `kagent serve` counts, and its rendering in Prometheus' text exposition format (version
// 0.0.4) for GET /metrics: the queue (depth, capacity, source bytes, the progress of the batches in
// flight), evaluations by outcome, the latency of an evaluation from admission to answer as a
// histogram, each GPU's busy seconds and busy share of the service's uptime, each GPU's warm
// problems (EvalBackend::warm), how workers picked requests (judge/affinity.hpp), and the HTTP
// answers by status. Thread-safe.
#include <chrono>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace kagent::serve {

// One GPU worker's warm problems as its backend last reported them. The counters add up over the
// backends the worker made (a fresh one after a failure starts its own from 0).
struct GpuWarm {
  int gpu = 0;
  size_t problems = 0;
  uint64_t gpu_bytes = 0, host_bytes = 0;
  long started_ahead = 0, started_in_turn = 0, evicted = 0;
  size_t spares = 0;     // spare reference servers ready now
  long spares_used = 0;  // problems started in a spare
};

// The evaluation queue as of now (EvalQueue::state).
struct QueueState {
  size_t depth = 0, capacity = 0;
  size_t bytes = 0, capacity_bytes = 0;  // of the queued requests' sources
  // Batches admitted and not yet wholly answered (a single /v1/evaluate is a batch of one), and
  // their requests by state.
  size_t batches = 0, batch_queued = 0, batch_running = 0, batch_done = 0;
  size_t warm_limit = 0;  // problems kept warm per GPU
  double warm_memory_share = 0;
  size_t warm_spares = 0;  // spare servers kept per GPU
  std::vector<GpuWarm> gpus;
};

class Metrics {
 public:
  // Histogram bucket bounds of the latency, seconds.
  static const std::vector<double>& latency_buckets();

  explicit Metrics(std::vector<int> gpus);
  // An evaluation answered: its outcome ("correct", "incorrect", "compile_error", "crash",
  // "timeout", "rejected", "expired", "unavailable", "error") and seconds from admission to answer.
  void evaluation(const std::string& outcome, double latency_s);
  // A GPU's worker spent `seconds` on an evaluation.
  void gpu_busy(int gpu, double seconds);
  // A worker took a request by this rule of the affinity policy ("aged", "warm", "cold", "steal").
  void pick(const std::string& rule);
  void http_answer(int status);
  // Everything, with the queue as of now.
  std::string render(const QueueState& queue, bool available) const;

 private:
  mutable std::mutex mu_;
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
  std::map<std::string, long> outcomes_;
  std::vector<long> buckets_;  // cumulative counts are formed when rendering
  long latency_count_ = 0;
  double latency_sum_ = 0;
  std::map<int, double> busy_s_;
  std::map<std::string, long> picks_;
  std::map<int, long> http_;
};

}  // namespace kagent::serve
