// The HTTP side of `kagent serve`: routes, the bearer token, body limits, and the answers of the
// evaluation queue turned into responses.
#include "kagent/serve/service.hpp"

#include <httplib.h>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "kagent/common/error.hpp"
#include "kagent/eval/candidate_kinds.hpp"
#include "kagent/serve/problem_path.hpp"

namespace kagent::serve {

namespace {

std::string dump(const nlohmann::json& j) {
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

void send(httplib::Response& res, int status, const nlohmann::json& body, int retry_after_s = 0) {
  res.status = status;
  if (retry_after_s > 0) res.set_header("Retry-After", std::to_string(retry_after_s));
  res.set_content(dump(body) + "\n", "application/json");
}

// Answers requests the queue did not take: 503 while the service stops, or `refusal` (429: no room)
// with `why` and Retry-After. False when they were taken.
bool answer_refusal(httplib::Response& res, int refusal, int retry_after_s, const std::string& why) {
  if (refusal == 0) return false;
  if (refusal == 503)
    send(res, 503, error_body(503, "the service is stopping"));
  else
    send(res, refusal, error_body(refusal, why), retry_after_s);
  return true;
}

// Compares the whole length whatever the first difference, so the time taken says nothing of
// how much of a guess was right.
bool same_secret(const std::string& a, const std::string& b) {
  unsigned char diff = a.size() == b.size() ? 0 : 1;
  for (size_t i = 0; i < a.size(); ++i) diff |= static_cast<unsigned char>(a[i] ^ (i < b.size() ? b[i] : 0));
  return diff == 0;
}

double mib(size_t bytes) {
  return static_cast<double>(bytes) / (1 << 20);
}

}  // namespace

bool is_loopback(const std::string& host) {
  return host == "localhost" || host == "::1" || host == "[::1]" || host.rfind("127.", 0) == 0;
}

struct Service::Impl {
  ServeOptions opt;
  Metrics metrics;
  std::unique_ptr<EvalQueue> queue;  // none without a GPU
  httplib::Server http;

  Impl(ServeOptions o, judge::BackendFactory backends) : opt(std::move(o)), metrics(opt.gpus) {
    if (opt.unavailable.empty()) {
      EvalQueue::Options qo;
      qo.gpus = opt.gpus;
      qo.capacity = opt.queue_capacity;
      qo.capacity_bytes = opt.queue_bytes;
      qo.max_wait_s = opt.queue_timeout_s;
      qo.prebuilder = opt.prebuilder.get();
      qo.warm = opt.warm;
      queue = std::make_unique<EvalQueue>(qo, std::move(backends), &metrics);
    }
    // Each /v1/evaluate holds a thread while its request waits, so the pool follows the queue, up
    // to 1024 (a thread's stack is reserved memory; a trainer sends its step as batches, a thread
    // each). Beyond, connections wait in the pool's own queue; a few more threads keep /health,
    // /metrics and refusals answered while every other one waits on an evaluation.
    const size_t threads = opt.http_threads > 0 ? static_cast<size_t>(opt.http_threads)
                                                : std::min<size_t>(opt.queue_capacity, 1024) + opt.gpus.size() + 8;
    http.new_task_queue = [threads] { return new httplib::ThreadPool(threads); };
    http.set_payload_max_length(opt.limits.max_body_bytes);
    http.set_read_timeout(60, 0);
    http.set_write_timeout(60, 0);
    http.set_logger([this](const httplib::Request&, const httplib::Response& res) { metrics.http_answer(res.status); });
    routes();
  }

  // The request's candidates admitted, evaluated and answered; a refusal as its status, its
  // Retry-After and what the queue lacked room for.
  std::vector<Answer> evaluate(std::vector<EvaluateRequest> requests, int* refusal, int* retry_after,
                               std::string* why) {
    std::vector<judge::CandidateRequest> cands;
    for (auto& r : requests) cands.push_back(std::move(r.candidate));
    EvalQueue::Refusal refused = EvalQueue::Refusal::none;
    auto futures = queue->submit(std::move(cands), &refused);
    if (!futures) {
      *refusal = refused == EvalQueue::Refusal::stopping ? 503 : 429;
      *retry_after = queue->retry_after_s();
      *why = refused == EvalQueue::Refusal::bytes
                 ? fmt::format("the queue's sources would pass --queue-mb ({:g} MiB)", mib(opt.queue_bytes))
                 : fmt::format("the queue is full ({} evaluations waiting)", opt.queue_capacity);
      return {};
    }
    std::vector<Answer> out;
    for (auto& f : *futures) out.push_back(f.get());
    return out;
  }

  // 413 for candidates the queue could never hold (more than its requests or bytes): refused as too
  // large, not as busy, so a client does not retry them.
  bool refuse_too_large(httplib::Response& res, const std::vector<EvaluateRequest>& rs, const std::string& field) {
    size_t bytes = 0;
    for (const auto& r : rs) bytes += r.candidate.source.size();
    std::string why;
    if (rs.size() > opt.queue_capacity)
      why = fmt::format("{} requests, more than the queue holds ({})", rs.size(), opt.queue_capacity);
    else if (bytes > opt.queue_bytes)
      why =
          fmt::format("{} bytes of sources, more than the queue holds (--queue-mb {:g})", bytes, mib(opt.queue_bytes));
    if (why.empty()) return false;
    send(res, 413, error_body(413, why, field));
    return true;
  }

  // Parses (and resolves the problems of) a body, or answers the refusal.
  template <class Parse>
  bool read(const httplib::Request& req, httplib::Response& res, Parse parse) {
    try {
      parse(req.body);
      return true;
    } catch (const RequestError& e) {
      send(res, e.status(), error_body(e.status(), e.what(), e.field()));
    }
    return false;
  }

  bool refuse_unavailable(httplib::Response& res) {
    if (opt.unavailable.empty()) return false;
    send(res, 503, error_body(503, opt.unavailable));
    return true;
  }

  void routes() {
    http.set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
      if (opt.token.empty() || req.path == "/health") return httplib::Server::HandlerResponse::Unhandled;
      const std::string auth = req.get_header_value("Authorization");
      if (auth.rfind("Bearer ", 0) == 0 && same_secret(auth.substr(7), opt.token))
        return httplib::Server::HandlerResponse::Unhandled;
      res.set_header("WWW-Authenticate", "Bearer");
      send(res, 401,
           error_body(
               401,
               auth.empty() ? "missing: this service needs \"Authorization: Bearer <token>\"" : "wrong bearer token",
               "Authorization"));
      return httplib::Server::HandlerResponse::Handled;
    });
    // Answers httplib makes itself (413 for a body over the limit, 404, 400 for a malformed
    // request line) get a JSON body naming what is wrong.
    http.set_error_handler(httplib::Server::HandlerWithResponse([this](const httplib::Request& req,
                                                                       httplib::Response& res) {
      if (!res.body.empty()) return httplib::Server::HandlerResponse::Unhandled;  // ours already
      if (res.status == 413)
        send(res, 413, error_body(413, fmt::format("over the limit of {} bytes", opt.limits.max_body_bytes), "body"));
      else if (res.status == 404)
        send(res, 404, error_body(404, fmt::format("no such endpoint: {} {}", req.method, req.path), "path"));
      else
        send(res, res.status, error_body(res.status, fmt::format("HTTP {}", res.status)));
      return httplib::Server::HandlerResponse::Handled;
    }));
    http.set_exception_handler([](const httplib::Request&, httplib::Response& res, std::exception_ptr ep) {
      std::string what = "unknown";
      try {
        std::rethrow_exception(ep);
      } catch (const std::exception& e) {
        what = e.what();
      } catch (...) {
      }
      send(res, 500, error_body(500, "internal error: " + what));
    });

    http.Get("/health", [this](const httplib::Request&, httplib::Response& res) {
      if (!opt.unavailable.empty()) {
        send(res, 503, {{"status", "unavailable"}, {"reason", opt.unavailable}});
        return;
      }
      const QueueState q = queue->state();
      nlohmann::json gpus = nlohmann::json::object();
      for (const GpuWarm& g : q.gpus)
        gpus[std::to_string(g.gpu)] = {
            {"problems", g.problems}, {"gpu_bytes", g.gpu_bytes}, {"host_bytes", g.host_bytes}};
      send(res, 200,
           {{"status", "ok"},
            {"gpus", opt.gpus},
            {"queue_depth", q.depth},
            {"queue_capacity", q.capacity},
            {"warm", {{"limit", q.warm_limit}, {"memory_share", q.warm_memory_share}, {"gpus", gpus}}},
            {"version", KAGENT_VERSION}});
    });
    http.Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
      QueueState q;
      if (queue) {
        q = queue->state();
      } else {
        q.capacity = opt.queue_capacity;
        q.capacity_bytes = opt.queue_bytes;
        q.warm_limit = opt.warm.max_problems;
        q.warm_memory_share = opt.warm.memory_share;
      }
      res.set_content(metrics.render(q, opt.unavailable.empty()), "text/plain; version=0.0.4; charset=utf-8");
    });
    http.Post("/v1/evaluate", [this](const httplib::Request& req, httplib::Response& res) {
      std::vector<EvaluateRequest> rs;
      if (!read(req, res, [&](const std::string& body) {
            rs.push_back(parse_evaluate_request(body, opt.limits));
            rs.back().candidate.problem = resolve_problem(opt.problems_root, rs.back().problem);
          }))
        return;
      if (refuse_unavailable(res)) return;
      if (refuse_too_large(res, rs, "source")) return;
      int refusal = 0, retry_after = 0;
      std::string why;
      auto answers = evaluate(std::move(rs), &refusal, &retry_after, &why);
      if (answer_refusal(res, refusal, retry_after, fmt::format("{}: try again in {} s", why, retry_after))) return;
      send(res, answers[0].status, answers[0].body, answers[0].retry_after_s);
    });
    http.Post("/v1/evaluate_batch", [this](const httplib::Request& req, httplib::Response& res) {
      std::vector<EvaluateRequest> rs;
      if (!read(req, res, [&](const std::string& body) {
            rs = parse_batch_request(body, opt.limits);
            for (size_t i = 0; i < rs.size(); ++i)
              rs[i].candidate.problem =
                  resolve_problem(opt.problems_root, rs[i].problem, fmt::format("requests[{}].problem", i));
          }))
        return;
      if (refuse_unavailable(res)) return;
      if (refuse_too_large(res, rs, "requests")) return;
      int refusal = 0, retry_after = 0;
      std::string why;
      auto answers = evaluate(std::move(rs), &refusal, &retry_after, &why);
      if (answer_refusal(res, refusal, retry_after,
                         fmt::format("{}: no room for the batch; try again in {} s", why, retry_after)))
        return;
      nlohmann::json results = nlohmann::json::array();
      for (auto& a : answers) results.push_back(std::move(a.body));  // a record, or {"error": ...}
      send(res, 200, {{"results", results}});
    });
  }
};

namespace {

// A request may name the kinds the registry has (eval/candidate_kinds.hpp), unless told otherwise.
ServeOptions with_kinds(ServeOptions o) {
  if (o.limits.kinds.empty()) o.limits.kinds = candidate_kind_names();
  return o;
}

}  // namespace

Service::Service(ServeOptions options, judge::BackendFactory backends)
    : impl_(std::make_unique<Impl>(with_kinds(std::move(options)), std::move(backends))) {}

Service::~Service() {
  stop();
}

int Service::bind() {
  ServeOptions& o = impl_->opt;
  if (o.port == 0) {
    const int port = impl_->http.bind_to_any_port(o.host);
    if (port <= 0) throw EnvError(fmt::format("kagent serve: cannot bind {} (any port)", o.host));
    o.port = port;
  } else if (!impl_->http.bind_to_port(o.host, o.port)) {
    throw EnvError(
        fmt::format("kagent serve: cannot bind {}:{} (in use, or not an address of this machine)", o.host, o.port));
  }
  return o.port;
}

void Service::run() {
  impl_->http.listen_after_bind();
}

// The queue first: requests still waiting are answered 503 and the evaluations in progress end,
// so that the HTTP threads waiting on them can answer before the server stops.
void Service::stop() {
  if (impl_->queue) impl_->queue->stop();
  impl_->http.stop();
}

Metrics& Service::metrics() {
  return impl_->metrics;
}

}  // namespace kagent::serve
