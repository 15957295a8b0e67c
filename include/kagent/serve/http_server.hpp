#pragma once
// The HTTP/1.1 layer of `kagent serve`, event-driven on Boost.Beast and Asio: a connection holds
// no thread while it is idle, slow or waiting for its answer, and every resource a client can
// make the service spend before it is authorized is bounded (HttpLimits). The routes live above
// it (service.cpp); this file knows nothing of evaluations.
//
// A request's life: its header is read against an overall deadline and a byte limit; `authorize`
// sees it (the exact bytes of every field) before any of its body is read or `100 Continue` is
// sent, and a refusal closes the connection; the body is read against its own deadline and limit,
// counted as it arrives whatever the framing (Content-Length or chunked; no content coding is
// undone); `handle` gets the whole request and answers through its callback, from any thread, as
// late as it likes. Requests pipelined on one connection are answered in order.
#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace kagent::serve {

struct HttpLimits {
  size_t header_bytes = 16 << 10;                     // the request line and every field: beyond, 431
  size_t body_bytes = size_t{64} << 20;               // counted as it arrives: beyond, 413
  std::chrono::milliseconds header_deadline{10'000};  // from the first byte of a request to its header's end
  std::chrono::milliseconds body_deadline{60'000};    // from the header's end to the body's
  std::chrono::milliseconds idle_timeout{60'000};     // a kept-alive connection between requests
  std::chrono::milliseconds write_deadline{60'000};   // an answer's write
  size_t max_connections = 8192;                      // in all: beyond, a new one is closed at once
  size_t max_connections_per_client = 2048;           // from one address
  int backlog = 4096;                                 // listen(2)'s, for bursts of connections
  int io_threads = 2;                                 // threads running the event loop
  std::chrono::milliseconds stop_grace{3'000};        // stop(): answers in progress get this long
};

struct HttpField {
  std::string name, value;  // as received (Beast strips the whitespace around a value, nothing else)
};

struct HttpRequest {
  std::string method;  // "GET", "POST", ...
  std::string target;  // as received: path and query
  std::string path;    // target up to '?'
  std::vector<HttpField> fields;
  std::string body;    // empty until the body is read
  std::string client;  // the peer's address
  // The first field of that name (case-insensitive), or nullopt.
  std::optional<std::string> field(const std::string& name) const;
};

struct HttpResponse {
  int status = 200;
  std::string content_type = "application/json";
  std::string body;
  std::vector<HttpField> fields;  // more, such as Retry-After or WWW-Authenticate
};

class HttpServer {
 public:
  // Called with the header only; an answer refuses the request (the connection closes after it).
  using Authorize = std::function<std::optional<HttpResponse>(const HttpRequest& head)>;
  // Answers through `respond`, exactly once, from any thread.
  using Respond = std::function<void(HttpResponse)>;
  using Handle = std::function<void(HttpRequest request, Respond respond)>;
  // The server's own refusals (400, 408, 413, 431, 503) as answers: the status and what is wrong,
  // and the field the client should look at ("body", "header", ...).
  using Refusal = std::function<HttpResponse(int status, const std::string& message, const std::string& field)>;
  // Every answer's status, for the metrics.
  using Answered = std::function<void(int status)>;

  HttpServer(HttpLimits limits, Authorize authorize, Handle handle, Refusal refusal, Answered answered = {});
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Binds host:port (0: any free port) without SO_REUSEPORT, so a second service on a bound port
  // fails here; returns the port. Throws EnvError naming the address.
  int bind(const std::string& host, int port);
  // Serves until stop(), on limits.io_threads threads (this one among them). Destroy the server
  // only after run() returned, or without calling it.
  void run();
  // Stops accepting, closes idle connections, gives answers in progress limits.stop_grace, then
  // closes what is left; run() returns. Safe from any thread, more than once.
  void stop();

  // Runs `f` on one of the server's threads (work that should not hold a caller's lock).
  void post(std::function<void()> f);

  struct Stats {
    size_t connections = 0, refused_connections = 0, accept_errors = 0;
  };
  Stats stats() const;

 public:
  struct Impl;  // the .cpp's

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace kagent::serve
