#pragma once
// A real HTTP server on 127.0.0.1 (cpp-httplib) for the provider tests: routes are set before
// start(); it listens on a free port in its own thread and stops in the destructor.
#include <httplib.h>

#include <chrono>
#include <stdexcept>
#include <string>
#include <thread>

namespace kagent::test {

class MockServer {
 public:
  MockServer() = default;
  ~MockServer() { stop(); }
  MockServer(const MockServer&) = delete;
  MockServer& operator=(const MockServer&) = delete;

  httplib::Server& http() { return server_; }

  void start() {
    port_ = server_.bind_to_any_port("127.0.0.1");
    if (port_ <= 0) throw std::runtime_error("mock server: cannot bind 127.0.0.1");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
    for (int i = 0; i < 500 && !server_.is_running(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  void stop() {
    if (thread_.joinable()) {
      server_.stop();
      thread_.join();
    }
  }
  int port() const { return port_; }
  std::string url(const std::string& path = "") const { return "http://127.0.0.1:" + std::to_string(port_) + path; }

 private:
  httplib::Server server_;
  std::thread thread_;
  int port_ = 0;
};

}  // namespace kagent::test
