// The HTTP layer of kagent serve (serve/http_server.hpp) against hostile and heavy clients on
// 127.0.0.1, with raw sockets: bodies and headers over their limits whatever the framing, slow and
// idle connections by the thousand, bursts, pipelining, conflicting framing, the token before the
// body and before `100 Continue`, exclusive bind, and a stop that does not wait on clients. Bounded
// in count and time; thousands of connections need the descriptor limit raised, and a machine
// that cannot raise it skips those cases, saying so.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "kagent/common/error.hpp"
#include "kagent/serve/http_server.hpp"
#include "raw_client.hpp"

using namespace kagent::serve;
using namespace kagent::test::raw;
using namespace std::chrono_literals;

namespace {

// A server with the service's shape: /health open, everything else behind "Bearer s3cr3t"; the
// handler echoes the path and the body's size, /slow answers after 300 ms from another thread.
class Hostile : public ::testing::Test {
 protected:
  // The whole suite, every hostile and heavy case of it in one process, grows the peak RSS by less
  // than 64 MiB (clients and server together): nothing a client sends is held past its bound.
  static inline long suite_rss0 = 0;
  static void SetUpTestSuite() { suite_rss0 = peak_rss_kib(); }
  static void TearDownTestSuite() {
    const long grown = peak_rss_kib() - suite_rss0;
    std::printf("Hostile: peak RSS grew %ld KiB through the suite\n", grown);
    EXPECT_LT(grown, 64 << 10) << "KiB of peak RSS growth through the Hostile suite";
  }

  void SetUp() override { start(HttpLimits{}); }
  void TearDown() override { finish(); }

  void start(HttpLimits limits) {
    limits.body_bytes = std::min<size_t>(limits.body_bytes, 1 << 20);
    server = std::make_unique<HttpServer>(
        limits,
        [](const HttpRequest& head) -> std::optional<HttpResponse> {
          if (head.path == "/health") return std::nullopt;
          const auto auth = head.field("Authorization");
          if (auth && *auth == "Bearer s3cr3t") return std::nullopt;
          return HttpResponse{401, "application/json", "{\"error\": \"token\"}\n", {{"WWW-Authenticate", "Bearer"}}};
        },
        [](HttpRequest r, HttpServer::Respond respond) {
          if (r.path == "/slow") {
            std::thread([respond] {
              std::this_thread::sleep_for(300ms);
              respond({200, "text/plain", "slow\n", {}});
            }).detach();
            return;
          }
          respond({200, "text/plain", fmt::format("{} {}\n", r.path, r.body.size()), {}});
        },
        [](int status, const std::string& message, const std::string& field) {
          return HttpResponse{status, "application/json", fmt::format("{} {}: {}\n", status, field, message), {}};
        });
    port = server->bind("127.0.0.1", 0);
    runner = std::thread([this] { server->run(); });
  }

  void finish() {
    if (!server) return;
    server->stop();
    runner.join();
    server.reset();
  }

  std::unique_ptr<HttpServer> server;
  std::thread runner;
  int port = 0;
};

const std::string kAuth = "Authorization: Bearer s3cr3t\r\n";

TEST_F(Hostile, AChunkedBodyOverTheLimitIs413AsSoonAsItIsCrossed) {
  const long rss0 = peak_rss_kib();
  std::string chunk(1 << 20, 'a');
  std::string req = "POST /x HTTP/1.1\r\nHost: h\r\n" + kAuth + "Transfer-Encoding: chunked\r\n\r\n";
  const int fd = connect_to(port);
  ASSERT_GE(fd, 0);
  send_all(fd, req);
  const auto t0 = Clock::now();
  // Up to 64 MiB offered in 1 MiB chunks; the answer comes once the second one crosses 1 MiB.
  for (int i = 0; i < 64; ++i) {
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, 0) > 0) break;
    send_all(fd, fmt::format("{:x}\r\n", chunk.size()) + chunk + "\r\n");
  }
  const std::string raw = read_all(fd, 3000ms);
  close(fd);
  EXPECT_EQ(statuses(raw), std::vector<int>{413}) << raw.substr(0, 300);
  EXPECT_LT(seconds_since(t0), 2.0);
  EXPECT_LT(peak_rss_kib() - rss0, 64 << 10) << "KiB of peak RSS growth";
}

TEST_F(Hostile, AContentLengthOverTheLimitIs413BeforeAnyBodyArrives) {
  const Exchange e = talk(port, "POST /x HTTP/1.1\r\nHost: h\r\n" + kAuth + "Content-Length: 999999999\r\n\r\n");
  EXPECT_EQ(statuses(e.raw), std::vector<int>{413}) << e.raw;
  EXPECT_LT(e.seconds, 1.0);
}

TEST_F(Hostile, ACompressedBodyIsNotUnpacked) {
  // A body that says gzip reaches the handler as the bytes sent: nothing is inflated.
  const std::string body(1000, '\x1f');
  const Exchange e =
      talk(port, "POST /x HTTP/1.1\r\nHost: h\r\n" + kAuth +
                     "Content-Encoding: gzip\r\nConnection: close\r\nContent-Length: 1000\r\n\r\n" + body);
  EXPECT_EQ(statuses(e.raw), std::vector<int>{200}) << e.raw;
  EXPECT_NE(e.raw.find("/x 1000"), std::string::npos) << e.raw;
}

TEST_F(Hostile, AHeaderOverTheLimitIs431) {
  const Exchange e = talk(port, "GET /" + std::string(512 << 10, 'a') + " HTTP/1.1\r\nHost: h\r\n\r\n");
  EXPECT_EQ(statuses(e.raw), std::vector<int>{431}) << e.raw.substr(0, 200);
  EXPECT_LT(e.seconds, 1.0);
  const Exchange many = talk(
      port, "GET /health HTTP/1.1\r\n" + [] {
        std::string h;
        for (int i = 0; i < 5000; ++i) h += fmt::format("X-{}: y\r\n", i);
        return h;
      }() + "\r\n");
  EXPECT_EQ(statuses(many.raw), std::vector<int>{431}) << many.raw.substr(0, 200);
}

TEST_F(Hostile, TheTokenIsCheckedBeforeTheBodyAndBefore100Continue) {
  // No body is ever sent: the refusal must not wait for it, nor invite it.
  const Exchange e =
      talk(port, "POST /x HTTP/1.1\r\nHost: h\r\nExpect: 100-continue\r\nContent-Length: 100000\r\n\r\n");
  EXPECT_EQ(statuses(e.raw), std::vector<int>{401}) << e.raw;
  EXPECT_LT(e.seconds, 1.0);
  const Exchange ok = talk(port,
                           "POST /x HTTP/1.1\r\nHost: h\r\n" + kAuth +
                               "Expect: 100-continue\r\nContent-Length: 5\r\nConnection: close\r\n\r\n",
                           500ms);
  EXPECT_EQ(statuses(ok.raw), std::vector<int>{100}) << ok.raw;
}

TEST_F(Hostile, TheTokenIsComparedOnTheBytesSent) {
  const Exchange encoded = talk(port, "GET /x HTTP/1.1\r\nHost: h\r\nAuthorization: Bearer %733cr3t\r\n\r\n");
  EXPECT_EQ(statuses(encoded.raw), std::vector<int>{401}) << encoded.raw;
  const Exchange right = talk(port, "GET /x HTTP/1.1\r\nHost: h\r\n" + kAuth + "Connection: close\r\n\r\n");
  EXPECT_EQ(statuses(right.raw), std::vector<int>{200}) << right.raw;
}

TEST_F(Hostile, PipelinedRequestsAreAnsweredInOrder) {
  const Exchange e = talk(port, "GET /a HTTP/1.1\r\nHost: h\r\n" + kAuth + "\r\nGET /slow HTTP/1.1\r\nHost: h\r\n" +
                                    kAuth + "\r\nGET /c HTTP/1.1\r\nHost: h\r\n" + kAuth + "Connection: close\r\n\r\n");
  EXPECT_EQ(statuses(e.raw), (std::vector<int>{200, 200, 200})) << e.raw;
  const size_t a = e.raw.find("/a 0"), slow = e.raw.find("slow"), c = e.raw.find("/c 0");
  EXPECT_TRUE(a < slow && slow < c && c != std::string::npos) << e.raw;
}

TEST_F(Hostile, ConflictingFramingIs400) {
  const Exchange two =
      talk(port, "POST /x HTTP/1.1\r\nHost: h\r\n" + kAuth + "Content-Length: 5\r\nContent-Length: 6\r\n\r\nhello!");
  EXPECT_EQ(statuses(two.raw), std::vector<int>{400}) << two.raw;
  const Exchange both =
      talk(port, "POST /x HTTP/1.1\r\nHost: h\r\n" + kAuth +
                     "Content-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n");
  EXPECT_EQ(statuses(both.raw).size(), 1u) << both.raw;
  EXPECT_NE(statuses(both.raw), std::vector<int>{200})
      << "a body framed two ways is refused, not guessed: " << both.raw;
}

TEST_F(Hostile, ASilentOrSlowHeaderIsClosedAtItsDeadline) {
  finish();
  HttpLimits l;
  l.header_deadline = 500ms;
  start(l);
  const Exchange silent = talk(port, "", 3000ms);
  EXPECT_LT(silent.seconds, 1.5) << "a connection that says nothing is closed at the header's deadline";
  const auto t0 = Clock::now();
  const int fd = connect_to(port);
  ASSERT_GE(fd, 0);
  // One byte every 100 ms: each read is quick, the header as a whole is not.
  std::string got;
  for (char c : std::string("GET /health HTTP/1.1\r\nHost: h\r\n")) {
    send_all(fd, std::string(1, c));
    got += read_all(fd, 100ms);
    if (seconds_since(t0) > 3) break;
  }
  close(fd);
  EXPECT_LT(seconds_since(t0), 1.5) << "a header trickling in is cut at its deadline, whatever each byte's pace";
}

TEST_F(Hostile, ConnectionsPastTheClientsBoundAreClosedAndOthersServed) {
  finish();
  HttpLimits l;
  l.max_connections_per_client = 20;
  start(l);
  std::vector<int> held;
  for (int i = 0; i < 20; ++i) held.push_back(connect_to(port));
  const Exchange over = talk(port, "GET /health HTTP/1.1\r\nHost: h\r\n\r\n", 1000ms);
  EXPECT_TRUE(over.raw.empty()) << "the 21st connection from one address is closed unanswered: " << over.raw;
  close(held.back());
  held.pop_back();
  std::this_thread::sleep_for(100ms);
  const Exchange again = talk(port, "GET /health HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n", 1000ms);
  EXPECT_EQ(statuses(again.raw), std::vector<int>{200}) << again.raw;
  for (int fd : held) close(fd);
  EXPECT_GE(server->stats().refused_connections, 1u);
}

TEST_F(Hostile, AnotherServerCannotBindTheSamePort) {
  HttpServer second(
      HttpLimits{}, {}, [](HttpRequest, HttpServer::Respond) {},
      [](int s, const std::string& m, const std::string&) {
        return HttpResponse{s, "text/plain", m, {}};
      });
  EXPECT_THROW(second.bind("127.0.0.1", port), kagent::EnvError);
}

// accept() failing for want of descriptors (EMFILE): the server logs it, pauses, and accepts the
// waiting connections once descriptors are free again, instead of closing its listening socket.
TEST_F(Hostile, AnAcceptErrorIsSurvived) {
  std::vector<int> clients;
  for (int i = 0; i < 3; ++i) clients.push_back(socket(AF_INET, SOCK_STREAM, 0));
  ASSERT_GE(*std::min_element(clients.begin(), clients.end()), 0);
  // RLIMIT_NOFILE bounds descriptor numbers: at the lowest free number nothing more can be opened.
  const int lowest_free = dup(0);
  ASSERT_GE(lowest_free, 0);
  close(lowest_free);
  rlimit saved{};
  getrlimit(RLIMIT_NOFILE, &saved);
  rlimit tight = saved;
  tight.rlim_cur = static_cast<rlim_t>(lowest_free);
  ASSERT_EQ(setrlimit(RLIMIT_NOFILE, &tight), 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  int connected = 0;
  for (int fd : clients)  // the handshake completes in the kernel's queue; accept() then fails
    connected += connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
  const auto t0 = Clock::now();
  while (server->stats().accept_errors == 0 && seconds_since(t0) < 5) std::this_thread::sleep_for(10ms);
  const size_t errors = server->stats().accept_errors;
  setrlimit(RLIMIT_NOFILE, &saved);
  EXPECT_EQ(connected, 3);
  EXPECT_GT(errors, 0u) << "accept() never failed with the descriptor limit at " << lowest_free;
  for (int fd : clients) {
    send_all(fd, "GET /health HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n");
    EXPECT_EQ(statuses(read_all(fd, 5000ms)), std::vector<int>{200}) << "a connection waiting through the error";
    close(fd);
  }
  EXPECT_EQ(statuses(talk(port, "GET /health HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n").raw),
            std::vector<int>{200});
}

// 2,000 idle connections and 200 that send a byte now and then: /health stays quick, the server
// holds no thread for them, and stop() returns within seconds.
TEST_F(Hostile, IdleAndSlowConnectionsHoldNothingAndStopIsQuick) {
  const rlim_t fds = raise_fd_limit(8192);
  if (fds < 5000) GTEST_SKIP() << "the descriptor limit is " << fds << " (hard limit): 2,200 connections need 5,000";
  finish();
  HttpLimits l;
  l.header_deadline = 60s;              // the slow ones must stay open through the measurement
  l.max_connections_per_client = 4096;  // they all come from 127.0.0.1
  start(l);
  HeldConnections held(port, 2000, 200, "GET /health HTTP/1.1\r\n");
  ASSERT_EQ(held.failed(), 0);
  const HealthProbes p = probe_health(port, held, 100);
  ASSERT_EQ(p.seconds.size(), 100u) << p.not_ok;
  EXPECT_LT(p.seconds[98], 0.1) << "p99 of /health with 2,200 connections open";
  const auto t0 = Clock::now();
  finish();
  EXPECT_LT(seconds_since(t0), 5.0) << "stop() with 2,200 connections open";
}

// A burst of 2,000 connections, each asking /health at once: every one answered within 5 s.
TEST_F(Hostile, ABurstOfTwoThousandIsAllAnswered) {
  const rlim_t fds = raise_fd_limit(8192);
  if (fds < 4500) GTEST_SKIP() << "the descriptor limit is " << fds << " (hard limit): a burst of 2,000 needs 4,500";
  for (int round = 0; round < 2; ++round) {
    const auto t0 = Clock::now();
    std::vector<int> fds_open;
    for (int i = 0; i < 2000; ++i) {
      const int fd = connect_to(port);
      ASSERT_GE(fd, 0) << "connection " << i;
      send_all(fd, "GET /health HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n");
      fds_open.push_back(fd);
    }
    int answered = 0;
    for (int fd : fds_open) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(5s - (Clock::now() - t0));
      if (statuses(read_all(fd, std::max(left, 1ms))) == std::vector<int>{200}) ++answered;
      close(fd);
    }
    EXPECT_EQ(answered, 2000) << "round " << round;
    EXPECT_LT(seconds_since(t0), 5.0) << "round " << round;
  }
}

}  // namespace
