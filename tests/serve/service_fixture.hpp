// A kagent serve Service in this process on 127.0.0.1 with the fake backend (no GPU), for the
// service's tests (test_service.cpp, test_service_load.cpp): a problem root holding
// level1/19_ReLU.py, start(options) on a free port, stop() releasing blocked evaluations first.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <thread>

#include "fake_backend.hpp"
#include "kagent/serve/service.hpp"
#include "test_util.hpp"

namespace kagent::test {

class ServiceFixture : public ::testing::Test {
 protected:
  TempDir tmp;
  FakeBackendState state;
  std::unique_ptr<serve::Service> service;
  std::thread thread;
  int port = 0;

  void SetUp() override { tmp.write("root/level1/19_ReLU.py", "# problem\n"); }
  void TearDown() override { stop(); }

  void start(serve::ServeOptions o = {}) {
    o.host = "127.0.0.1";
    o.port = 0;
    o.problems_root = tmp / "root";
    if (o.gpus.empty()) o.gpus = {0};
    service = std::make_unique<serve::Service>(o, fake_backends(&state));
    port = service->bind();
    thread = std::thread([this] { service->run(); });
  }
  void stop() {
    state.release();
    if (service) service->stop();
    if (thread.joinable()) thread.join();
    service.reset();
  }
};

}  // namespace kagent::test
