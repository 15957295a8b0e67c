#include "kagent/serve/metrics.hpp"

#include <algorithm>

#include <fmt/format.h>

namespace kagent::serve {

const std::vector<double>& Metrics::latency_buckets() {
  static const std::vector<double> b = {0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60, 120, 300, 600};
  return b;
}

Metrics::Metrics(std::vector<int> gpus) : buckets_(latency_buckets().size(), 0) {
  for (int g : gpus) busy_s_[g] = 0;
  // Every outcome shows from the start (at 0), so that rates over them are defined before the first.
  for (const char* o :
       {"correct", "incorrect", "compile_error", "crash", "timeout", "rejected", "expired", "unavailable", "error"})
    outcomes_[o] = 0;
  for (const char* r : {"aged", "warm", "cold", "steal"}) picks_[r] = 0;
}

void Metrics::evaluation(const std::string& outcome, double latency_s) {
  std::lock_guard<std::mutex> lock(mu_);
  ++outcomes_[outcome];
  ++latency_count_;
  latency_sum_ += latency_s;
  const auto& b = latency_buckets();
  auto it = std::lower_bound(b.begin(), b.end(), latency_s);  // le: the first bound >= the value
  if (it != b.end()) ++buckets_[static_cast<size_t>(it - b.begin())];
}

void Metrics::gpu_busy(int gpu, double seconds) {
  std::lock_guard<std::mutex> lock(mu_);
  busy_s_[gpu] += seconds;
}

void Metrics::pick(const std::string& rule) {
  std::lock_guard<std::mutex> lock(mu_);
  ++picks_[rule];
}

void Metrics::http_answer(int status) {
  std::lock_guard<std::mutex> lock(mu_);
  ++http_[status];
}

std::string Metrics::render(const QueueState& q, bool available) const {
  std::lock_guard<std::mutex> lock(mu_);
  const double up_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  std::string out;
  auto head = [&](const char* name, const char* type, const char* help) {
    out += fmt::format("# HELP {} {}\n# TYPE {} {}\n", name, help, name, type);
  };
  head("kagent_up", "gauge", "1 when the service can evaluate (a GPU), 0 when it answers 503.");
  out += fmt::format("kagent_up {}\n", available ? 1 : 0);
  head("kagent_queue_depth", "gauge", "Evaluations admitted and waiting for a GPU worker.");
  out += fmt::format("kagent_queue_depth {}\n", q.depth);
  head("kagent_queue_capacity", "gauge", "Evaluations the queue holds before answering 429.");
  out += fmt::format("kagent_queue_capacity {}\n", q.capacity);
  head("kagent_queue_bytes", "gauge", "Bytes of the sources of the evaluations waiting.");
  out += fmt::format("kagent_queue_bytes {}\n", q.bytes);
  head("kagent_queue_capacity_bytes", "gauge", "Bytes of sources the queue holds before answering 429.");
  out += fmt::format("kagent_queue_capacity_bytes {}\n", q.capacity_bytes);
  head("kagent_batches_in_flight", "gauge", "Batches admitted and not yet wholly answered (a single request is one).");
  out += fmt::format("kagent_batches_in_flight {}\n", q.batches);
  head("kagent_batch_requests", "gauge", "Requests of the batches in flight, by state.");
  out += fmt::format("kagent_batch_requests{{state=\"queued\"}} {}\n", q.batch_queued);
  out += fmt::format("kagent_batch_requests{{state=\"running\"}} {}\n", q.batch_running);
  out += fmt::format("kagent_batch_requests{{state=\"done\"}} {}\n", q.batch_done);
  head("kagent_queue_picks_total", "counter", "Requests taken by the workers, by the rule that chose them.");
  for (const auto& [r, n] : picks_) out += fmt::format("kagent_queue_picks_total{{rule=\"{}\"}} {}\n", r, n);
  head("kagent_evaluations_total", "counter", "Evaluations answered, by outcome.");
  for (const auto& [o, n] : outcomes_) out += fmt::format("kagent_evaluations_total{{outcome=\"{}\"}} {}\n", o, n);
  head("kagent_evaluation_latency_seconds", "histogram", "Seconds from admission to answer of an evaluation.");
  long cumulative = 0;
  const auto& b = latency_buckets();
  for (size_t i = 0; i < b.size(); ++i) {
    cumulative += buckets_[i];
    out += fmt::format("kagent_evaluation_latency_seconds_bucket{{le=\"{:g}\"}} {}\n", b[i], cumulative);
  }
  out += fmt::format("kagent_evaluation_latency_seconds_bucket{{le=\"+Inf\"}} {}\n", latency_count_);
  out += fmt::format("kagent_evaluation_latency_seconds_sum {}\n", latency_sum_);
  out += fmt::format("kagent_evaluation_latency_seconds_count {}\n", latency_count_);
  head("kagent_gpu_busy_seconds_total", "counter", "Seconds each GPU's worker spent evaluating.");
  for (const auto& [g, s] : busy_s_) out += fmt::format("kagent_gpu_busy_seconds_total{{gpu=\"{}\"}} {}\n", g, s);
  head("kagent_gpu_busy_ratio", "gauge", "Each GPU's busy seconds over the service's uptime.");
  for (const auto& [g, s] : busy_s_)
    out += fmt::format("kagent_gpu_busy_ratio{{gpu=\"{}\"}} {}\n", g, up_s > 0 ? std::min(1.0, s / up_s) : 0.0);
  head("kagent_warm_problems_limit", "gauge", "Problems each GPU's worker keeps warm at most.");
  out += fmt::format("kagent_warm_problems_limit {}\n", q.warm_limit);
  head("kagent_warm_problems", "gauge", "Problems warm (or being started ahead) on each GPU.");
  for (const GpuWarm& g : q.gpus) out += fmt::format("kagent_warm_problems{{gpu=\"{}\"}} {}\n", g.gpu, g.problems);
  head("kagent_warm_gpu_bytes", "gauge", "GPU memory held by each GPU's warm problems, as last measured.");
  for (const GpuWarm& g : q.gpus) out += fmt::format("kagent_warm_gpu_bytes{{gpu=\"{}\"}} {}\n", g.gpu, g.gpu_bytes);
  head("kagent_warm_host_bytes", "gauge", "Host memory held by each GPU's warm problems, as last measured.");
  for (const GpuWarm& g : q.gpus) out += fmt::format("kagent_warm_host_bytes{{gpu=\"{}\"}} {}\n", g.gpu, g.host_bytes);
  head("kagent_problem_starts_total", "counter",
       "Problems started on each GPU: ahead (announced, on a helper thread) or in turn (cold when taken).");
  for (const GpuWarm& g : q.gpus) {
    out += fmt::format("kagent_problem_starts_total{{gpu=\"{}\",how=\"ahead\"}} {}\n", g.gpu, g.started_ahead);
    out += fmt::format("kagent_problem_starts_total{{gpu=\"{}\",how=\"in_turn\"}} {}\n", g.gpu, g.started_in_turn);
  }
  head("kagent_problem_evictions_total", "counter", "Warm problems let go on each GPU to stay within the bounds.");
  for (const GpuWarm& g : q.gpus)
    out += fmt::format("kagent_problem_evictions_total{{gpu=\"{}\"}} {}\n", g.gpu, g.evicted);
  head("kagent_spare_servers_limit", "gauge", "Spare reference servers each GPU's worker keeps ready at most.");
  out += fmt::format("kagent_spare_servers_limit {}\n", q.warm_spares);
  head("kagent_spare_servers", "gauge",
       "Spare reference servers ready on each GPU: started before their problem is known, taken by a new problem.");
  for (const GpuWarm& g : q.gpus) out += fmt::format("kagent_spare_servers{{gpu=\"{}\"}} {}\n", g.gpu, g.spares);
  head("kagent_spare_servers_used_total", "counter", "Problems started in a spare reference server on each GPU.");
  for (const GpuWarm& g : q.gpus)
    out += fmt::format("kagent_spare_servers_used_total{{gpu=\"{}\"}} {}\n", g.gpu, g.spares_used);
  head("kagent_http_responses_total", "counter", "HTTP answers, by status code.");
  for (const auto& [code, n] : http_) out += fmt::format("kagent_http_responses_total{{code=\"{}\"}} {}\n", code, n);
  head("kagent_uptime_seconds", "gauge", "Seconds since the service started.");
  out += fmt::format("kagent_uptime_seconds {}\n", up_s);
  return out;
}

}  // namespace kagent::serve
