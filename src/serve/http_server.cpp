// The event-driven HTTP/1.1 layer of `kagent serve` (http_server.hpp): an acceptor and one
// session per connection on Asio strands, Beast's parser with its limits, deadlines on every read
// and write, and a registry of sessions so that stop() can close the idle ones at once and the
// busy ones after a grace period.
#include "kagent/serve/http_server.hpp"

#include <strings.h>
#include <atomic>
#include <cstdint>  // before Boost: some of its headers use std::uint32_t without it (GCC 13, 14)
#include <map>
#include <mutex>
#include <thread>

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include "kagent/common/error.hpp"
#include "kagent/serve/port_holder.hpp"

namespace kagent::serve {

namespace beast = boost::beast;
namespace http = beast::http;
namespace net = boost::asio;
using tcp = net::ip::tcp;

std::optional<std::string> HttpRequest::field(const std::string& name) const {
  for (const HttpField& f : fields)
    if (strcasecmp(f.name.c_str(), name.c_str()) == 0) return f.value;
  return std::nullopt;
}

class HttpSession;

// Members in the order they must outlive each other: the io_context's destructor destroys the
// handlers still queued, and with them the last sessions, whose destructors reach the registry;
// the acceptor and the timers go before the io_context.
struct HttpServer::Impl {
  HttpLimits limits;
  Authorize authorize;
  Handle handle;
  Refusal refusal;
  Answered answered;

  std::atomic<bool> stopping{false};
  std::atomic<bool> destroying{false};  // ~HttpServer: nothing more is posted

  mutable std::mutex mu;  // what follows
  std::map<std::string, size_t> per_client;
  std::map<HttpSession*, std::weak_ptr<HttpSession>> sessions;
  Stats counts;

  net::io_context ioc;
  tcp::acceptor acceptor{ioc};
  net::steady_timer accept_pause{ioc};
  net::steady_timer grace{ioc};
  std::optional<net::executor_work_guard<net::io_context::executor_type>> work{ioc.get_executor()};

  Impl(HttpLimits l, Authorize a, Handle h, Refusal r, Answered an)
      : limits(l), authorize(std::move(a)), handle(std::move(h)), refusal(std::move(r)), answered(std::move(an)) {}

  void do_accept();
  void on_accept(beast::error_code ec, tcp::socket socket);
  // Counts a connection from `client` in, or refuses it (false) past the limits.
  bool admit(const std::string& client) {
    std::lock_guard lock(mu);
    size_t& mine = per_client[client];
    if (counts.connections >= limits.max_connections || mine >= limits.max_connections_per_client) {
      if (mine == 0) per_client.erase(client);
      ++counts.refused_connections;
      return false;
    }
    ++mine;
    ++counts.connections;
    return true;
  }
  void leave(HttpSession* s, const std::string& client) {
    bool last = false;
    {
      std::lock_guard lock(mu);
      sessions.erase(s);
      auto it = per_client.find(client);
      if (it != per_client.end() && --it->second == 0) per_client.erase(it);
      --counts.connections;
      last = sessions.empty();
    }
    // Stopping and the last connection gone: no need to wait out the grace period.
    if (last && stopping && !destroying) net::post(ioc, [this] { stop_now(); });
  }
  void stop_now();
};

// One connection: read a request (header, authorization, body), hand it on, write the answer,
// and again while the client keeps the connection alive. Every step runs on the connection's
// strand; the handler's answer comes back to it through post().
class HttpSession : public std::enable_shared_from_this<HttpSession> {
 public:
  HttpSession(tcp::socket socket, HttpServer::Impl* srv, std::string client)
      : stream_(std::move(socket)), buffer_(srv->limits.header_bytes + 4096), srv_(srv), client_(std::move(client)) {}
  ~HttpSession() { srv_->leave(this, client_); }

  void start() {
    net::dispatch(stream_.get_executor(), [self = shared_from_this()] { self->wait_for_request(); });
  }

  // stop(): an idle connection closes now, a busy one after its answer (or when the grace ends).
  void wind_down(bool force) {
    net::post(stream_.get_executor(), [self = shared_from_this(), force] {
      self->closing_ = true;
      if (force || !self->busy_) self->close();
    });
  }

 private:
  // Until the first byte of the next request: the connection is idle (its first request gets the
  // header's deadline, a kept-alive one the idle timeout).
  void wait_for_request() {
    if (closing_) return close();
    if (buffer_.size() > 0) return read_header();  // pipelined: already here
    stream_.expires_after(requests_ == 0 ? srv_->limits.header_deadline : srv_->limits.idle_timeout);
    stream_.async_read_some(buffer_.prepare(512), [self = shared_from_this()](beast::error_code ec, size_t n) {
      if (ec) return self->close();  // closed, reset or timed out while idle: nothing to answer
      self->buffer_.commit(n);
      self->read_header();
    });
  }

  void read_header() {
    parser_.emplace();
    parser_->header_limit(static_cast<std::uint32_t>(srv_->limits.header_bytes));
    parser_->body_limit(srv_->limits.body_bytes);
    stream_.expires_after(srv_->limits.header_deadline);
    http::async_read_header(stream_, buffer_, *parser_,
                            [self = shared_from_this()](beast::error_code ec, size_t) { self->on_header(ec); });
  }

  void on_header(beast::error_code ec) {
    if (ec) return refuse_read(ec, "header");
    ++requests_;
    const auto& req = parser_->get();
    head_ = HttpRequest{};
    head_.method = std::string(req.method_string());
    head_.target = std::string(req.target());
    head_.path = head_.target.substr(0, head_.target.find('?'));
    head_.client = client_;
    for (const auto& f : req) head_.fields.push_back({std::string(f.name_string()), std::string(f.value())});
    keep_alive_ = req.keep_alive();
    if (srv_->authorize) {
      std::optional<HttpResponse> no;
      try {
        no = srv_->authorize(head_);
      } catch (const std::exception& e) {  // an exception must not leave the event loop
        no = srv_->refusal(500, std::string("internal error: ") + e.what(), "");
      }
      if (no) {
        keep_alive_ = false;  // its body, if any, is never read
        return write(std::move(*no));
      }
    }
    if (parser_->is_done()) return dispatch();
    if (auto expect = head_.field("Expect"); expect && strcasecmp(expect->c_str(), "100-continue") == 0) {
      auto cont = std::make_shared<http::response<http::empty_body>>(http::status::continue_, req.version());
      stream_.expires_after(srv_->limits.write_deadline);
      http::async_write(stream_, *cont, [self = shared_from_this(), cont](beast::error_code wec, size_t) {
        if (wec) return self->close();
        self->read_body();
      });
      return;
    }
    read_body();
  }

  void read_body() {
    stream_.expires_after(srv_->limits.body_deadline);
    http::async_read(stream_, buffer_, *parser_, [self = shared_from_this()](beast::error_code ec, size_t) {
      if (ec) return self->refuse_read(ec, "body");
      self->dispatch();
    });
  }

  // A request that could not be read: its status and the connection closed after it (or just
  // closed, when the client left or said nothing at all).
  void refuse_read(beast::error_code ec, const std::string& part) {
    if (ec == http::error::end_of_stream || ec == net::error::eof || ec == net::error::connection_reset ||
        ec == net::error::operation_aborted)
      return close();
    keep_alive_ = false;
    const HttpLimits& l = srv_->limits;
    if (ec == beast::error::timeout)
      return write(srv_->refusal(408,
                                 fmt::format("the {} did not arrive within {} ms", part,
                                             (part == "header" ? l.header_deadline : l.body_deadline).count()),
                                 part));
    if (ec == http::error::header_limit)
      return write(
          srv_->refusal(431, fmt::format("the header is over the limit of {} bytes", l.header_bytes), "header"));
    if (ec == http::error::body_limit)
      return write(srv_->refusal(413, fmt::format("over the limit of {} bytes", l.body_bytes), "body"));
    if (ec == http::error::buffer_overflow)
      return write(
          srv_->refusal(431, fmt::format("the header is over the limit of {} bytes", l.header_bytes), "header"));
    write(srv_->refusal(400, fmt::format("malformed HTTP {}: {}", part, ec.message()), part));
  }

  void dispatch() {
    busy_ = true;
    HttpRequest request = std::move(head_);
    request.body = parser_->release().body();
    auto once = std::make_shared<std::atomic<bool>>(false);
    auto respond = [self = shared_from_this(), once](HttpResponse r) {
      if (once->exchange(true)) return;
      net::post(self->stream_.get_executor(), [self, r = std::move(r)]() mutable { self->write(std::move(r)); });
    };
    try {
      srv_->handle(std::move(request), respond);
    } catch (const std::exception& e) {
      respond(srv_->refusal(500, std::string("internal error: ") + e.what(), ""));
    }
  }

  void write(HttpResponse r) {
    auto res = std::make_shared<http::response<http::string_body>>(static_cast<http::status>(r.status), 11);
    res->set(http::field::content_type, r.content_type);
    for (const HttpField& f : r.fields) res->set(f.name, f.value);
    res->body() = std::move(r.body);
    res->keep_alive(keep_alive_ && !closing_ && !srv_->stopping);
    res->prepare_payload();
    const int status = r.status;
    stream_.expires_after(srv_->limits.write_deadline);
    http::async_write(stream_, *res, [self = shared_from_this(), res, status](beast::error_code ec, size_t) {
      if (self->srv_->answered) self->srv_->answered(status);
      self->busy_ = false;
      if (ec || !res->keep_alive()) return self->close();
      self->wait_for_request();
    });
  }

  void close() {
    beast::error_code ignored;
    stream_.socket().shutdown(tcp::socket::shutdown_both, ignored);
    stream_.close();
  }

  beast::tcp_stream stream_;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  HttpRequest head_;
  HttpServer::Impl* srv_;  // outlives every session (see HttpServer::Impl)
  std::string client_;
  size_t requests_ = 0;
  bool keep_alive_ = false;
  bool busy_ = false;     // a request read and not yet answered
  bool closing_ = false;  // stop() was called: no more requests on this connection
};

void HttpServer::Impl::do_accept() {
  acceptor.async_accept(net::make_strand(ioc),
                        [this](beast::error_code ec, tcp::socket s) { on_accept(ec, std::move(s)); });
}

void HttpServer::Impl::on_accept(beast::error_code ec, tcp::socket socket) {
  if (stopping || ec == net::error::operation_aborted) return;
  if (ec) {
    // Out of descriptors, a connection reset before it was taken, ...: said, and the service goes
    // on; a short pause first, so that a full descriptor table does not spin this loop.
    {
      std::lock_guard lock(mu);
      ++counts.accept_errors;
    }
    spdlog::warn("kagent serve: accepting a connection: {}", ec.message());
    accept_pause.expires_after(std::chrono::milliseconds(50));
    accept_pause.async_wait([this](beast::error_code) {
      if (!stopping) do_accept();
    });
    return;
  }
  beast::error_code peer_ec;
  const auto peer = socket.remote_endpoint(peer_ec);
  const std::string client = peer_ec ? std::string("?") : peer.address().to_string();
  if (admit(client)) {
    auto s = std::make_shared<HttpSession>(std::move(socket), this, client);
    {
      std::lock_guard lock(mu);
      sessions[s.get()] = s;
    }
    s->start();
  } else {
    beast::error_code ignored;
    socket.close(ignored);
  }
  do_accept();
}

void HttpServer::Impl::stop_now() {
  std::vector<std::shared_ptr<HttpSession>> live;
  {
    std::lock_guard lock(mu);
    for (auto& [p, w] : sessions)
      if (auto s = w.lock()) live.push_back(std::move(s));
  }
  for (auto& s : live) s->wind_down(true);
  work.reset();
  ioc.stop();
}

HttpServer::HttpServer(HttpLimits limits, Authorize authorize, Handle handle, Refusal refusal, Answered answered)
    : impl_(std::make_unique<Impl>(limits, std::move(authorize), std::move(handle), std::move(refusal),
                                   std::move(answered))) {}

// After run() returned (or without it): the handlers still queued go with the io_context.
HttpServer::~HttpServer() {
  impl_->stopping = true;
  impl_->destroying = true;
}

int HttpServer::bind(const std::string& host, int port) {
  beast::error_code ec;
  net::ip::address addr = net::ip::make_address(host == "localhost" ? "127.0.0.1" : host, ec);
  if (ec) throw EnvError(fmt::format("kagent serve: {} is not an IP address of this machine", host));
  const tcp::endpoint ep(addr, static_cast<unsigned short>(port));
  tcp::acceptor& a = impl_->acceptor;
  a.open(ep.protocol(), ec);
  // SO_REUSEADDR lets a restarted service bind past connections in TIME_WAIT; without
  // SO_REUSEPORT a second listener on the port fails (Linux).
  if (!ec) a.set_option(net::socket_base::reuse_address(true), ec);
  if (!ec) a.bind(ep, ec);
  if (!ec) a.listen(impl_->limits.backlog, ec);
  if (ec == net::error::address_in_use) {
    const std::string holder = port_holder(port);
    throw EnvError(fmt::format("kagent serve: cannot listen on {}:{}: {}{}", host, port, ec.message(),
                               holder.empty() ? " (another program holds the port)" : ": held by " + holder));
  }
  if (ec)
    throw EnvError(fmt::format("kagent serve: cannot listen on {}:{}: {} (in use, or not an address of this machine)",
                               host, port, ec.message()));
  return a.local_endpoint().port();
}

void HttpServer::run() {
  impl_->do_accept();
  std::vector<std::thread> more;
  for (int i = 1; i < impl_->limits.io_threads; ++i) more.emplace_back([this] { impl_->ioc.run(); });
  impl_->ioc.run();
  for (auto& t : more) t.join();
}

void HttpServer::stop() {
  if (impl_->stopping.exchange(true)) return;
  net::post(impl_->ioc, [impl = impl_.get()] {
    beast::error_code ignored;
    impl->acceptor.close(ignored);
    impl->accept_pause.cancel();
    std::vector<std::shared_ptr<HttpSession>> live;
    {
      std::lock_guard lock(impl->mu);
      for (auto& [p, w] : impl->sessions)
        if (auto s = w.lock()) live.push_back(std::move(s));
    }
    for (auto& s : live) s->wind_down(false);
    if (live.empty()) return impl->stop_now();
    impl->grace.expires_after(impl->limits.stop_grace);
    impl->grace.async_wait([impl](beast::error_code) { impl->stop_now(); });
  });
}

void HttpServer::post(std::function<void()> f) {
  net::post(impl_->ioc, std::move(f));
}

HttpServer::Stats HttpServer::stats() const {
  std::lock_guard lock(impl_->mu);
  return impl_->counts;
}

}  // namespace kagent::serve
