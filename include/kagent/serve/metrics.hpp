#pragma once
// What `kagent serve` counts, and its rendering in Prometheus' text exposition format (version
// 0.0.4) for GET /metrics: queue depth and capacity, evaluations by outcome, the latency of an
// evaluation from admission to answer as a histogram, each GPU's busy seconds and busy share of
// the service's uptime, and the HTTP answers by status. Thread-safe.
#include <chrono>
#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace kagent::serve {

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
  void http_answer(int status);
  // Everything, with the queue's depth and capacity as of now.
  std::string render(size_t queue_depth, size_t queue_capacity, bool available) const;

 private:
  mutable std::mutex mu_;
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
  std::map<std::string, long> outcomes_;
  std::vector<long> buckets_;  // cumulative counts are formed when rendering
  long latency_count_ = 0;
  double latency_sum_ = 0;
  std::map<int, double> busy_s_;
  std::map<int, long> http_;
};

}  // namespace kagent::serve
