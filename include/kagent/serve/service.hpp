#pragma once
// `kagent serve`: evaluations over HTTP (serve/http_server.hpp) for sampling and RL training (docs/serve.md).
//   POST /v1/evaluate        one candidate (serve/request.hpp) -> `kagent eval --json`'s record
//   POST /v1/evaluate_batch  {"requests": [...]} -> {"results": [record or {"error": ...}, ...]}
//   GET  /health             200 {"status": "ok", ..., "warm": {...}}, or 503 {"status": "unavailable", "reason"}
//   GET  /metrics            Prometheus text (serve/metrics.hpp)
//   POST /v1/sessions, POST /v1/sessions/{id}/step, POST /v1/sessions/{id}/close, GET /v1/sessions/{id}:
//                            the agent's episodes for RL trainers (serve/sessions.hpp, docs/environment.md)
// Errors are {"error": {"status", "field", "message"}}: 400 a bad request (naming the field), 401
// no or a wrong bearer token, 404 no such problem or endpoint, 405 a known endpoint with another
// method, 408 a header or body slower than its deadline, 413 too large, 431 a header too large, 422 the problem or a
// plan that does not fit it, 429 the queue is full, in requests or in bytes of sources (Retry-After), 503 no GPU
// (naming why) or the GPU busy, 504 waited longer than --queue-timeout for a GPU. A request is parsed before anything
// else, so a service without a GPU still says what is wrong with a request.
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "kagent/eval/warm_limits.hpp"
#include "kagent/judge/backend.hpp"
#include "kagent/serve/eval_queue.hpp"
#include "kagent/serve/http_server.hpp"
#include "kagent/serve/metrics.hpp"
#include "kagent/serve/request.hpp"
#include "kagent/serve/sessions.hpp"

namespace kagent::serve {

struct ServeOptions {
  std::string host = "127.0.0.1";
  int port = 8080;  // 0: any free port (bind() says which)
  // Non-empty: every request but GET /health must carry "Authorization: Bearer <token>".
  std::string token;
  std::filesystem::path problems_root;  // requests name problems under it
  std::vector<int> gpus;                // a worker each
  std::string unavailable;              // non-empty: no GPU to evaluate on; evaluations answer 503 with it
  size_t queue_capacity = 4096;
  size_t queue_bytes = size_t{512} << 20;  // of the queued sources (429 beyond)
  double queue_timeout_s = 600;            // waiting longer for a worker: 504
  RequestLimits limits;
  // What each GPU's backend keeps warm (the backends are made with it; reported by /health and
  // /metrics until a backend says).
  WarmLimits warm;
  // The HTTP layer's bounds, deadlines and threads (its body limit is limits.max_body_bytes).
  HttpLimits http;
  // Builds queued candidates ahead of the GPU workers (judge/prebuild.hpp); null: none.
  std::shared_ptr<judge::Prebuilder> prebuilder;
  // The agent's episodes as sessions (serve/sessions.hpp).
  SessionOptions sessions;
};

// Whether the address reaches only this machine (127.0.0.0/8, ::1, localhost).
bool is_loopback(const std::string& host);

class Service {
 public:
  Service(ServeOptions options, judge::BackendFactory backends);
  ~Service();
  Service(const Service&) = delete;
  Service& operator=(const Service&) = delete;
  // Binds the address; returns the port. EnvError when it cannot.
  int bind();
  // Serves until stop() (from another thread or a signal's watcher).
  void run();
  // Evaluations waiting are answered 503, those in progress finish, then the server stops.
  void stop();
  Metrics& metrics();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace kagent::serve
