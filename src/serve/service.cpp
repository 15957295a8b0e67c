// The routes of `kagent serve` on its HTTP layer (http_server.hpp): the bearer token and the
// route checked on the header alone, the bodies parsed, and the evaluation queue's answers turned
// into responses without a thread waiting for them.
#include "kagent/serve/service.hpp"

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <thread>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "kagent/common/error.hpp"
#include "kagent/eval/candidate_kinds.hpp"
#include "kagent/serve/http_server.hpp"
#include "kagent/serve/problem_path.hpp"

namespace kagent::serve {

namespace {

std::string dump(const nlohmann::json& j) {
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

HttpResponse json_response(int status, const nlohmann::json& body, int retry_after_s = 0) {
  HttpResponse r;
  r.status = status;
  r.body = dump(body) + "\n";
  if (retry_after_s > 0) r.fields.push_back({"Retry-After", std::to_string(retry_after_s)});
  return r;
}

HttpResponse error_response(int status, const std::string& message, const std::string& field = "",
                            int retry_after_s = 0) {
  return json_response(status, error_body(status, message, field), retry_after_s);
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

struct Route {
  const char* method;
  const char* path;
};
// /v1/sessions (POST: open), /v1/sessions/{id} (GET: state), /v1/sessions/{id}/step and /close (POST).
struct SessionRoute {
  enum Kind { none, open, state, step, close } kind = none;
  std::string id;
};

SessionRoute session_route(const std::string& path) {
  const std::string prefix = "/v1/sessions";
  if (path == prefix) return {SessionRoute::open, ""};
  if (path.rfind(prefix + "/", 0) != 0) return {};
  std::string rest = path.substr(prefix.size() + 1);
  SessionRoute r;
  const size_t slash = rest.find('/');
  r.id = rest.substr(0, slash);
  if (r.id.empty() || r.id.size() > 64) return {};
  if (slash == std::string::npos) {
    r.kind = SessionRoute::state;
  } else {
    const std::string verb = rest.substr(slash + 1);
    if (verb == "step")
      r.kind = SessionRoute::step;
    else if (verb == "close")
      r.kind = SessionRoute::close;
    else
      return {};
  }
  return r;
}

constexpr Route kRoutes[] = {
    {"GET", "/health"}, {"GET", "/metrics"}, {"POST", "/v1/evaluate"}, {"POST", "/v1/evaluate_batch"}};

}  // namespace

bool is_loopback(const std::string& host) {
  return host == "localhost" || host == "::1" || host == "[::1]" || host.rfind("127.", 0) == 0;
}

struct Service::Impl {
  ServeOptions opt;
  Metrics metrics;
  std::unique_ptr<EvalQueue> queue;  // none without a GPU
  std::unique_ptr<Sessions> sessions;
  std::unique_ptr<HttpServer> http;
  // Session requests block (a tool runs for minutes): each runs on a thread of its own, counted so
  // that the service outlives them. At most one step per session runs, so --max-sessions bounds them.
  std::mutex work_mu;
  std::condition_variable work_cv;
  size_t working = 0;

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
    sessions = std::make_unique<Sessions>(opt.sessions, opt.limits, opt.problems_root, queue.get(), opt.unavailable,
                                          opt.gpus.empty() ? 0 : opt.gpus.front());
    HttpLimits limits = opt.http;
    limits.body_bytes = opt.limits.max_body_bytes;
    http = std::make_unique<HttpServer>(
        limits, [this](const HttpRequest& head) { return admit(head); },
        [this](HttpRequest r, HttpServer::Respond respond) { handle(std::move(r), std::move(respond)); },
        [](int status, const std::string& message, const std::string& field) {
          return error_response(status, message, field);
        },
        [this](int status) { metrics.http_answer(status); });
  }

  ~Impl() {
    std::unique_lock<std::mutex> lock(work_mu);
    work_cv.wait(lock, [&] { return working == 0; });
  }

  // On the header alone, before any body is read: the route, then the token (every route but
  // GET /health needs it when one is set), compared on the bytes the client sent.
  std::optional<HttpResponse> admit(const HttpRequest& head) {
    const Route* route = nullptr;
    bool path_known = false;
    for (const Route& r : kRoutes) {
      if (head.path != r.path) continue;
      path_known = true;
      if (head.method == r.method) route = &r;
    }
    const SessionRoute session = session_route(head.path);
    if (session.kind != SessionRoute::none) {
      path_known = true;
      const char* method = session.kind == SessionRoute::state ? "GET" : "POST";
      if (head.method != method)
        return error_response(405, fmt::format("{} {}: this endpoint takes {}", head.method, head.path, method),
                              "method");
    } else if (route == nullptr) {
      if (path_known)
        return error_response(405,
                              fmt::format("{} {}: this endpoint takes {}", head.method, head.path,
                                          head.path == "/health" || head.path == "/metrics" ? "GET" : "POST"),
                              "method");
      return error_response(404, fmt::format("no such endpoint: {} {}", head.method, head.path), "path");
    }
    if (opt.token.empty() || head.path == "/health") return std::nullopt;
    const std::optional<std::string> auth = head.field("Authorization");
    if (auth && auth->rfind("Bearer ", 0) == 0 && same_secret(auth->substr(7), opt.token)) return std::nullopt;
    HttpResponse r = error_response(
        401, !auth ? "missing: this service needs \"Authorization: Bearer <token>\"" : "wrong bearer token",
        "Authorization");
    r.fields.push_back({"WWW-Authenticate", "Bearer"});
    return r;
  }

  void handle(HttpRequest req, HttpServer::Respond respond) {
    if (const SessionRoute route = session_route(req.path); route.kind != SessionRoute::none)
      return session(route, std::move(req), std::move(respond));
    if (req.path == "/health") return respond(health());
    if (req.path == "/metrics") return respond(metrics_text());
    const bool batch = req.path == "/v1/evaluate_batch";
    std::vector<EvaluateRequest> rs;
    try {
      if (batch) {
        rs = parse_batch_request(req.body, opt.limits);
        for (size_t i = 0; i < rs.size(); ++i)
          rs[i].candidate.problem =
              resolve_problem(opt.problems_root, rs[i].problem, fmt::format("requests[{}].problem", i));
      } else {
        rs.push_back(parse_evaluate_request(req.body, opt.limits));
        rs.back().candidate.problem = resolve_problem(opt.problems_root, rs.back().problem);
      }
    } catch (const RequestError& e) {
      return respond(error_response(e.status(), e.what(), e.field()));
    }
    if (!opt.unavailable.empty()) return respond(error_response(503, opt.unavailable));
    if (auto too_large = refuse_too_large(rs, batch ? "requests" : "source")) return respond(std::move(*too_large));
    evaluate(std::move(rs), batch, std::move(respond));
  }

  // A session request, on a thread of its own (it may wait for a tool or the GPU for minutes).
  void session(SessionRoute route, HttpRequest req, HttpServer::Respond respond) {
    {
      std::lock_guard<std::mutex> lock(work_mu);
      ++working;
    }
    std::thread([this, route, req = std::move(req), respond = std::move(respond)] {
      Answer a;
      try {
        switch (route.kind) {
          case SessionRoute::open:
            a = sessions->open(req.body);
            break;
          case SessionRoute::step:
            a = sessions->step(route.id, req.body);
            break;
          case SessionRoute::close:
            a = sessions->close(route.id);
            break;
          case SessionRoute::state:
            a = sessions->state(route.id);
            break;
          case SessionRoute::none:
            break;
        }
      } catch (const std::exception& e) {
        spdlog::error("session request {} failed: {}", req.path, e.what());
        a = answer_of(500, error_body(500, fmt::format("internal error: {}", e.what())));
      }
      respond(json_response(a.status, a.body, a.retry_after_s));
      std::lock_guard<std::mutex> lock(work_mu);
      --working;
      work_cv.notify_all();
    }).detach();
  }

  HttpResponse health() {
    if (!opt.unavailable.empty()) return json_response(503, {{"status", "unavailable"}, {"reason", opt.unavailable}});
    const QueueState q = queue->state();
    nlohmann::json gpus = nlohmann::json::object();
    for (const GpuWarm& g : q.gpus)
      gpus[std::to_string(g.gpu)] = {
          {"problems", g.problems}, {"gpu_bytes", g.gpu_bytes}, {"host_bytes", g.host_bytes}, {"spares", g.spares}};
    return json_response(
        200,
        {{"status", "ok"},
         {"gpus", opt.gpus},
         {"queue_depth", q.depth},
         {"queue_capacity", q.capacity},
         {"warm",
          {{"limit", q.warm_limit}, {"memory_share", q.warm_memory_share}, {"spares", q.warm_spares}, {"gpus", gpus}}},
         {"version", KAGENT_VERSION}});
  }

  HttpResponse metrics_text() {
    QueueState q;
    if (queue) {
      q = queue->state();
    } else {
      q.capacity = opt.queue_capacity;
      q.capacity_bytes = opt.queue_bytes;
      q.warm_limit = opt.warm.max_problems;
      q.warm_memory_share = opt.warm.memory_share;
      q.warm_spares = opt.warm.spares;
    }
    HttpResponse r;
    r.content_type = "text/plain; version=0.0.4; charset=utf-8";
    r.body = metrics.render(q, opt.unavailable.empty());
    return r;
  }

  // 413 for candidates the queue could never hold (more than its requests or bytes): refused as too
  // large, not as busy, so a client does not retry them.
  std::optional<HttpResponse> refuse_too_large(const std::vector<EvaluateRequest>& rs, const std::string& field) {
    size_t bytes = 0;
    for (const auto& r : rs) bytes += r.candidate.source.size();
    std::string why;
    if (rs.size() > opt.queue_capacity)
      why = fmt::format("{} requests, more than the queue holds ({})", rs.size(), opt.queue_capacity);
    else if (bytes > opt.queue_bytes)
      why =
          fmt::format("{} bytes of sources, more than the queue holds (--queue-mb {:g})", bytes, mib(opt.queue_bytes));
    if (why.empty()) return std::nullopt;
    return error_response(413, why, field);
  }

  // The candidates admitted whole or refused (429 no room, 503 stopping); their answers gathered
  // as the workers give them, and the response made on the HTTP layer's threads once the last is
  // in (the queue calls back under its lock).
  void evaluate(std::vector<EvaluateRequest> requests, bool batch, HttpServer::Respond respond) {
    struct Gathered {
      std::vector<Answer> answers;
      std::atomic<size_t> left{0};
    };
    auto g = std::make_shared<Gathered>();
    g->answers.resize(requests.size());
    g->left = requests.size();
    std::vector<judge::CandidateRequest> cands;
    for (auto& r : requests) cands.push_back(std::move(r.candidate));
    HttpServer* server = http.get();
    auto on_answer = [g, batch, respond, server](size_t i, Answer a) {
      g->answers[i] = std::move(a);
      if (--g->left != 0) return;
      server->post([g, batch, respond] {
        if (!batch) {
          const Answer& a0 = g->answers[0];
          return respond(json_response(a0.status, a0.body, a0.retry_after_s));
        }
        nlohmann::json results = nlohmann::json::array();
        for (auto& a : g->answers) results.push_back(std::move(a.body));  // a record, or {"error": ...}
        respond(json_response(200, {{"results", results}}));
      });
    };
    EvalQueue::Refusal refused = EvalQueue::Refusal::none;
    if (queue->submit(std::move(cands), on_answer, &refused)) return;
    if (refused == EvalQueue::Refusal::stopping) return respond(error_response(503, "the service is stopping"));
    const int retry = queue->retry_after_s();
    const std::string why =
        refused == EvalQueue::Refusal::bytes
            ? fmt::format("the queue's sources would pass --queue-mb ({:g} MiB)", mib(opt.queue_bytes))
            : fmt::format("the queue is full ({} evaluations waiting)", opt.queue_capacity);
    respond(error_response(429,
                           batch ? fmt::format("{}: no room for the batch; try again in {} s", why, retry)
                                 : fmt::format("{}: try again in {} s", why, retry),
                           "", retry));
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
  o.port = impl_->http->bind(o.host, o.port);
  return o.port;
}

void Service::run() {
  impl_->http->run();
}

// The queue first: requests still waiting are answered 503 and the evaluations in progress end,
// so that their answers are written before the HTTP layer closes what is left.
void Service::stop() {
  if (impl_->queue) impl_->queue->stop();  // a session's evaluation waiting is answered too
  impl_->http->stop();
}

Metrics& Service::metrics() {
  return impl_->metrics;
}

}  // namespace kagent::serve
