#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <ctime>
#include <string>
#include <thread>
#include <vector>

#include "kagent/llm/http.hpp"
#include "log_capture.hpp"
#include "mock_server.hpp"

using namespace kagent::llm;
using namespace std::chrono_literals;
using kagent::test::MockServer;

namespace {

using Clock = std::chrono::steady_clock;

std::chrono::milliseconds since(Clock::time_point start) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start);
}

// Fast retries so that the retry tests take milliseconds.
HttpOptions fast(int max_attempts = 3) {
  HttpOptions o;
  o.connect_timeout = 2000ms;
  o.idle_timeout = 5000ms;
  o.max_attempts = max_attempts;
  o.backoff_base = 10ms;
  o.backoff_max = 5000ms;
  return o;
}

// A mock server whose slow handlers wait on `released`: TearDown releases them before stopping
// the server, which waits for its handlers, so no test ends waiting out a handler's full sleep.
class HttpTest : public ::testing::Test {
 protected:
  void TearDown() override {
    released = true;
    server.stop();
    cancel_flag() = false;
  }
  // Sleeps up to `limit`, less once the test has ended.
  void hold(std::chrono::milliseconds limit) {
    const auto start = Clock::now();
    while (!released && since(start) < limit) std::this_thread::sleep_for(10ms);
  }
  // A handler streaming `chunks` with `gap` between them (stopping early once the client left).
  httplib::Server::Handler stream(std::vector<std::string> chunks, std::chrono::milliseconds gap) {
    return [this, chunks, gap](const httplib::Request&, httplib::Response& res) {
      res.set_chunked_content_provider("text/event-stream", [this, chunks, gap](size_t, httplib::DataSink& sink) {
        for (const auto& c : chunks) {
          if (released || !sink.is_writable() || !sink.write(c.data(), c.size())) return false;
          hold(gap);
        }
        sink.done();
        return true;
      });
    };
  }

  std::atomic<bool> released{false};
  std::atomic<int> hits{0};
  MockServer server;
};

}  // namespace

TEST_F(HttpTest, OkReturnsBodyAndLowerCasedHeaders) {
  server.http().Post("/v1", [this](const httplib::Request&, httplib::Response& res) {
    ++hits;
    res.set_header("X-Request-Id", "req-42");
    res.set_content("{\"ok\":true}", "application/json");
  });
  server.start();
  HttpResponse r = HttpClient(fast()).post(server.url("/v1"), {"Content-Type: application/json"}, "{}");
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, "{\"ok\":true}");
  EXPECT_EQ(r.headers["x-request-id"], "req-42");
  EXPECT_EQ(r.headers["content-type"], "application/json");
  EXPECT_EQ(r.attempts, 1);
  EXPECT_FALSE(r.cancelled);
  EXPECT_TRUE(r.transport_error.empty());
  EXPECT_GT(r.seconds, 0);
  EXPECT_EQ(hits, 1);
}

TEST_F(HttpTest, RequestHeadersAndBodyReachTheServer) {
  // Echoed back rather than stored: the handler runs on the server's thread.
  server.http().Post("/echo", [](const httplib::Request& req, httplib::Response& res) {
    res.set_header("X-Got-Key", req.get_header_value("x-api-key"));
    res.set_header("X-Got-Version", req.get_header_value("Anthropic-Version"));
    res.set_header("X-Got-Type", req.get_header_value("Content-Type"));
    res.set_content(req.body, "text/plain");
  });
  server.start();
  const std::string body = "{\"model\":\"m\",\"messages\":[\"" + std::string(3000, 'x') + "\"]}";
  HttpResponse r = HttpClient(fast()).post(
      server.url("/echo"), {"x-api-key: sk-test", "anthropic-version: 2023-06-01", "Content-Type: application/json"},
      body);
  ASSERT_EQ(r.status, 200) << r.transport_error;
  EXPECT_EQ(r.headers["x-got-key"], "sk-test");
  EXPECT_EQ(r.headers["x-got-version"], "2023-06-01");
  EXPECT_EQ(r.headers["x-got-type"], "application/json");
  EXPECT_EQ(r.body, body);
}

TEST_F(HttpTest, RetryAfterSecondsIsHonoured) {
  server.http().Post("/", [this](const httplib::Request&, httplib::Response& res) {
    if (++hits == 1) {
      res.status = 429;
      res.set_header("Retry-After", "1");
      res.set_content("{\"error\":\"slow down\"}", "application/json");
    } else {
      res.set_content("done", "text/plain");
    }
  });
  server.start();
  int retries = 0;
  const auto start = Clock::now();
  HttpResponse r = HttpClient(fast()).post(server.url("/"), {}, "{}", {}, [&] { ++retries; });
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, "done");
  EXPECT_EQ(r.attempts, 2);
  EXPECT_EQ(retries, 1);
  EXPECT_GE(since(start), 1000ms);
  EXPECT_EQ(r.headers.count("retry-after"), 0u) << "only the last response's headers";
}

TEST_F(HttpTest, RetryAfterMsIsHonoured) {
  server.http().Post("/", [this](const httplib::Request&, httplib::Response& res) {
    if (++hits == 1) {
      res.status = 429;
      res.set_header("retry-after-ms", "200");
    } else {
      res.set_content("done", "text/plain");
    }
  });
  server.start();
  const auto start = Clock::now();
  HttpResponse r = HttpClient(fast()).post(server.url("/"), {}, "{}");
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.attempts, 2);
  EXPECT_GE(since(start), 200ms);
}

TEST_F(HttpTest, RetryAfterIsCappedAtBackoffMax) {
  server.http().Post("/", [this](const httplib::Request&, httplib::Response& res) {
    if (++hits == 1) {
      res.status = 529;  // Anthropic's "overloaded"
      res.set_header("Retry-After", "30");
    } else {
      res.set_content("done", "text/plain");
    }
  });
  server.start();
  HttpOptions o = fast();
  o.backoff_max = 100ms;
  const auto start = Clock::now();
  HttpResponse r = HttpClient(o).post(server.url("/"), {}, "{}");
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.attempts, 2);
  EXPECT_LT(since(start), 2000ms);
}

TEST_F(HttpTest, ServerErrorsAreRetriedThenSucceed) {
  server.http().Post("/", [this](const httplib::Request&, httplib::Response& res) {
    if (++hits <= 2) {
      res.status = 500;
      res.set_header("X-Failed-Attempt", std::to_string(hits.load()));
    } else {
      res.set_content("third time", "text/plain");
    }
  });
  server.start();
  int retries = 0;
  HttpResponse r = HttpClient(fast()).post(server.url("/"), {}, "{}", {}, [&] { ++retries; });
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, "third time");
  EXPECT_EQ(r.attempts, 3);
  EXPECT_EQ(retries, 2);
  EXPECT_EQ(hits, 3);
  EXPECT_EQ(r.headers.count("x-failed-attempt"), 0u);
}

TEST_F(HttpTest, PersistentErrorEndsWithTheLastStatus) {
  server.http().Post("/", [this](const httplib::Request&, httplib::Response& res) {
    ++hits;
    res.status = 503;
    res.set_content("{\"error\":{\"message\":\"busy\"}}", "application/json");
  });
  server.start();
  HttpResponse r = HttpClient(fast(3)).post(server.url("/"), {}, "{}");
  EXPECT_EQ(r.status, 503);
  EXPECT_EQ(r.attempts, 3);
  EXPECT_EQ(hits, 3);
  EXPECT_EQ(r.body, "{\"error\":{\"message\":\"busy\"}}");
  EXPECT_TRUE(r.transport_error.empty());
}

TEST_F(HttpTest, ClientErrorIsNotRetried) {
  server.http().Post("/", [this](const httplib::Request&, httplib::Response& res) {
    ++hits;
    res.status = 400;
    res.set_content("bad request", "text/plain");
  });
  server.start();
  HttpResponse r = HttpClient(fast(5)).post(server.url("/"), {}, "{}");
  EXPECT_EQ(r.status, 400);
  EXPECT_EQ(r.attempts, 1);
  EXPECT_EQ(hits, 1);
  EXPECT_EQ(r.body, "bad request");
}

TEST_F(HttpTest, SilentServerHitsTheIdleTimeoutAndIsRetried) {
  server.http().Post("/", [this](const httplib::Request&, httplib::Response& res) {
    ++hits;
    hold(3000ms);
    res.set_content("too late", "text/plain");
  });
  server.start();
  HttpOptions o = fast(2);
  o.idle_timeout = 300ms;
  const auto start = Clock::now();
  HttpResponse r = HttpClient(o).post(server.url("/"), {}, "{}");
  const auto took = since(start);
  EXPECT_EQ(r.status, 0);
  EXPECT_EQ(r.attempts, 2);
  EXPECT_NE(r.transport_error.find("idle"), std::string::npos) << r.transport_error;
  EXPECT_FALSE(r.cancelled);
  EXPECT_GE(took, 600ms);
  EXPECT_LT(took, 1500ms);
  EXPECT_LT(r.seconds, 1.0);
  EXPECT_EQ(hits, 2);
}

TEST_F(HttpTest, ConnectionRefusedIsRetriedThenGivenUp) {
  int port = 0;
  {
    MockServer gone;  // a port that was free a moment ago and has nothing listening now
    gone.start();
    port = gone.port();
  }
  int retries = 0;
  kagent::test::LogCapture log;
  HttpResponse r = HttpClient(fast(3)).post("http://127.0.0.1:" + std::to_string(port) + "/?key=secret", {}, "{}", {},
                                            [&] { ++retries; });
  EXPECT_EQ(r.status, 0);
  EXPECT_EQ(r.attempts, 3);
  EXPECT_EQ(retries, 2);
  // Each wait is said, so an unreachable endpoint is not seconds of silence; the query is left out.
  EXPECT_NE(log.text().find("(attempt 2 of 3)"), std::string::npos) << log.text();
  EXPECT_NE(log.text().find("(attempt 3 of 3)"), std::string::npos) << log.text();
  EXPECT_EQ(log.text().find("secret"), std::string::npos) << log.text();
  EXPECT_FALSE(r.transport_error.empty());
  EXPECT_FALSE(r.cancelled);
}

TEST_F(HttpTest, StreamedChunksReachTheSinkInOrder) {
  const std::vector<std::string> chunks = {"data: one\n\n", "data: two\n\n", "data: three\n\n"};
  server.http().Post("/stream", stream(chunks, 50ms));
  server.start();
  std::vector<std::string> got;
  HttpResponse r = HttpClient(fast()).post(server.url("/stream"), {}, "{}", [&](std::string_view c) {
    got.emplace_back(c);
    return true;
  });
  ASSERT_EQ(r.status, 200) << r.transport_error;
  EXPECT_EQ(r.body, "data: one\n\ndata: two\n\ndata: three\n\n");
  std::string joined;
  for (const auto& c : got) joined += c;
  EXPECT_EQ(joined, r.body);
  EXPECT_GE(got.size(), 2u) << "the chunks came 50 ms apart: they should arrive as they are sent";
  EXPECT_EQ(r.headers["content-type"], "text/event-stream");
}

TEST_F(HttpTest, SinkReturningFalseStopsTheTransfer) {
  server.http().Post("/stream", stream(std::vector<std::string>(40, "data: x\n\n"), 50ms));
  server.start();
  int calls = 0;
  const auto start = Clock::now();
  HttpResponse r = HttpClient(fast()).post(server.url("/stream"), {}, "{}", [&](std::string_view) {
    ++calls;
    return false;
  });
  EXPECT_LT(since(start), 1000ms);
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(r.status, 200) << "the receiver chose to stop: the status stands";
  EXPECT_EQ(r.attempts, 1) << "the receiver's stop is not retried";
  EXPECT_FALSE(r.cancelled);
}

TEST_F(HttpTest, ErrorBodyIsNotStreamedToTheSink) {
  server.http().Post("/stream", [this](const httplib::Request& req, httplib::Response& res) {
    if (++hits == 1) {
      res.status = 429;
      res.set_header("retry-after-ms", "10");
      res.set_content("{\"error\":\"rate limited\"}", "application/json");
    } else {
      stream({"data: ok\n\n"}, 0ms)(req, res);
    }
  });
  server.start();
  std::string streamed;
  int retries = 0;
  HttpResponse r = HttpClient(fast()).post(
      server.url("/stream"), {}, "{}",
      [&](std::string_view c) {
        streamed += c;
        return true;
      },
      [&] { ++retries; });
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.attempts, 2);
  EXPECT_EQ(retries, 1);
  EXPECT_EQ(streamed, "data: ok\n\n");
  EXPECT_EQ(r.body, "data: ok\n\n");
}

TEST_F(HttpTest, CancelStopsAStreamQuickly) {
  server.http().Post("/stream", stream(std::vector<std::string>(60, "data: x\n\n"), 50ms));
  server.start();
  int calls = 0;
  std::thread canceller([] {
    std::this_thread::sleep_for(200ms);
    cancel_flag() = true;
  });
  const auto start = Clock::now();
  HttpResponse r = HttpClient(fast(3)).post(server.url("/stream"), {}, "{}", [&](std::string_view) {
    ++calls;
    return true;
  });
  const auto took = since(start);
  canceller.join();
  cancel_flag() = false;
  EXPECT_TRUE(r.cancelled);
  EXPECT_EQ(r.attempts, 1) << "no retry after a cancel";
  EXPECT_GE(calls, 1);
  EXPECT_LT(took, 1000ms);
}

TEST_F(HttpTest, CancelInterruptsTheRetryWait) {
  server.http().Post("/", [this](const httplib::Request&, httplib::Response& res) {
    ++hits;
    res.status = 503;
    res.set_header("Retry-After", "5");
  });
  server.start();
  std::thread canceller([] {
    std::this_thread::sleep_for(200ms);
    cancel_flag() = true;
  });
  const auto start = Clock::now();
  HttpResponse r = HttpClient(fast(3)).post(server.url("/"), {}, "{}");
  const auto took = since(start);
  canceller.join();
  cancel_flag() = false;
  EXPECT_TRUE(r.cancelled);
  EXPECT_EQ(r.attempts, 1);
  EXPECT_EQ(hits, 1);
  EXPECT_LT(took, 1500ms);
}

TEST(HttpRetry, RetryableStatuses) {
  for (long s : {408L, 409L, 429L, 500L, 502L, 503L, 504L, 529L, 599L}) EXPECT_TRUE(retryable_status(s)) << s;
  for (long s : {0L, 200L, 204L, 301L, 400L, 401L, 403L, 404L, 422L, 600L}) EXPECT_FALSE(retryable_status(s)) << s;
}

TEST(HttpRetry, RetryAfterForms) {
  auto with = [](std::map<std::string, std::string> headers) {
    HttpResponse r;
    r.headers = std::move(headers);
    return retry_after(r);
  };
  EXPECT_FALSE(with({}).has_value());
  EXPECT_EQ(with({{"retry-after-ms", "200"}}), 200ms);
  EXPECT_EQ(with({{"retry-after-ms", "1.2"}}), 2ms) << "rounded up: never sooner than asked";
  EXPECT_EQ(with({{"retry-after", "2"}}), 2000ms);
  EXPECT_EQ(with({{"retry-after", " 3 "}}), 3000ms);
  EXPECT_EQ(with({{"retry-after", "0.25"}}), 250ms);
  EXPECT_EQ(with({{"retry-after", "0"}}), 0ms);
  EXPECT_EQ(with({{"retry-after", "-5"}}), 0ms) << "never negative";
  EXPECT_FALSE(with({{"retry-after", "soon"}}).has_value());
  EXPECT_FALSE(with({{"retry-after", ""}}).has_value());
  EXPECT_FALSE(with({{"retry-after", "2s"}}).has_value());
  EXPECT_EQ(with({{"retry-after-ms", "150"}, {"retry-after", "9"}}), 150ms) << "the precise one wins";
  EXPECT_EQ(with({{"retry-after-ms", "junk"}, {"retry-after", "4"}}), 4000ms);

  char future[64], past[64];
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  const std::time_t later = now + 10;
  gmtime_r(&later, &tm);
  std::strftime(future, sizeof future, "%a, %d %b %Y %H:%M:%S GMT", &tm);
  const std::time_t earlier = now - 3600;
  gmtime_r(&earlier, &tm);
  std::strftime(past, sizeof past, "%a, %d %b %Y %H:%M:%S GMT", &tm);
  auto wait = with({{"retry-after", future}});
  ASSERT_TRUE(wait.has_value()) << future;
  EXPECT_GE(*wait, 8000ms) << future;
  EXPECT_LE(*wait, 10000ms) << future;
  EXPECT_EQ(with({{"retry-after", past}}), 0ms) << past;
}

TEST(HttpRedact, ReplacesEveryOccurrence) {
  EXPECT_EQ(redact("key sk-123 and sk-123.", "sk-123"), "key [redacted] and [redacted].");
  EXPECT_EQ(redact("sk-123", "sk-123"), "[redacted]");
  EXPECT_EQ(redact("nothing here", "sk-123"), "nothing here");
  EXPECT_EQ(redact("nothing here", ""), "nothing here");
  EXPECT_EQ(redact("", "sk"), "");
  EXPECT_EQ(redact("aaa", "aa"), "[redacted]a");
  EXPECT_EQ(redact("red red", "red"), "[redacted] [redacted]") << "the mark itself holds the secret";
}

// A stream cut after part of it reached the sink comes back at once (status 0), not retried: the
// caller has seen the part and decides (the OpenAI provider falls back to a plain request).
TEST(HttpStream, CutAfterDataIsNotRetried) {
  kagent::test::MockServer server;
  std::atomic<int> requests{0};
  server.http().Post("/cut", [&](const httplib::Request&, httplib::Response& res) {
    ++requests;
    res.set_chunked_content_provider("text/event-stream", [](size_t, httplib::DataSink& sink) {
      sink.write("data: {\"a\":", 11);
      return false;  // drop the connection mid-event
    });
  });
  server.start();
  kagent::llm::HttpOptions opt;
  opt.backoff_base = std::chrono::milliseconds(1);
  kagent::llm::HttpClient client(opt);
  std::string got;
  auto r = client.post(server.url("/cut"), {}, "{}", [&](std::string_view c) {
    got += c;
    return true;
  });
  EXPECT_EQ(r.status, 0);
  EXPECT_FALSE(r.transport_error.empty());
  EXPECT_EQ(r.attempts, 1);
  EXPECT_EQ(requests.load(), 1);
  EXPECT_EQ(got, "data: {\"a\":");
}

// An endpoint that streams without end grew kagent until the OOM killer ended it. The reply is
// abandoned at max_reply_bytes: the body (and what reached the sink) never holds more, the server
// sees the client go, and the abandoned reply is not asked for again.
TEST_F(HttpTest, EndlessStreamStopsAtTheByteBound) {
  std::atomic<size_t> sent{0};
  server.http().Post("/endless", [this, &sent](const httplib::Request&, httplib::Response& res) {
    ++hits;
    res.set_chunked_content_provider("text/event-stream", [this, &sent](size_t, httplib::DataSink& sink) {
      const std::string chunk = "data: " + std::string(64 * 1024 - 8, 'x') + "\n\n";
      for (int i = 0; i < 16384; ++i) {  // 1 GiB at most: bounded, and far past the bound below
        if (released || !sink.is_writable() || !sink.write(chunk.data(), chunk.size())) return false;
        sent += chunk.size();
      }
      sink.done();
      return true;
    });
  });
  server.start();
  HttpOptions o = fast(3);
  o.max_reply_bytes = 1 << 20;
  size_t streamed = 0;
  HttpResponse r = HttpClient(o).post(server.url("/endless"), {}, "{}", [&](std::string_view chunk) {
    streamed += chunk.size();
    return true;
  });
  EXPECT_TRUE(r.too_large);
  EXPECT_FALSE(r.cancelled);
  EXPECT_EQ(r.status, 0);
  EXPECT_NE(r.transport_error.find("exceeded the bound of 1048576 bytes"), std::string::npos) << r.transport_error;
  EXPECT_LE(r.body.size(), o.max_reply_bytes);
  EXPECT_LE(streamed, o.max_reply_bytes);
  EXPECT_GT(r.body.size(), o.max_reply_bytes / 2) << "it read up to the bound";
  EXPECT_EQ(r.attempts, 1) << "a reply over the bound is not asked for again";
  EXPECT_EQ(hits, 1);
  released = true;
  server.stop();
  EXPECT_LT(sent.load(), size_t{64} << 20) << "the server saw the client leave long before its 1 GiB";
}

// Not streamed: the same bound on the body.
TEST_F(HttpTest, OversizedBodyStopsAtTheByteBound) {
  server.http().Post("/big", [this](const httplib::Request&, httplib::Response& res) {
    ++hits;
    res.set_content(std::string(8 << 20, 'y'), "application/json");
  });
  server.start();
  HttpOptions o = fast(3);
  o.max_reply_bytes = 1 << 20;
  HttpResponse r = HttpClient(o).post(server.url("/big"), {}, "{}");
  EXPECT_TRUE(r.too_large);
  EXPECT_LE(r.body.size(), o.max_reply_bytes);
  EXPECT_EQ(r.attempts, 1);
  EXPECT_EQ(hits, 1);
  // Under the bound, the same reply is whole.
  o.max_reply_bytes = 16 << 20;
  r = HttpClient(o).post(server.url("/big"), {}, "{}");
  EXPECT_FALSE(r.too_large);
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body.size(), size_t{8} << 20);
}

// Keep-alive comments reset the idle timeout on every byte: a run with a 3 s budget went on for
// 50 s. The deadline stops the transfer whatever arrives, and no retry starts after it.
TEST_F(HttpTest, KeepAlivesDoNotOutliveTheDeadline) {
  server.http().Post("/pings", stream(std::vector<std::string>(2000, ": ping\n\n"), 20ms));  // 40 s of them
  server.start();
  int calls = 0;
  const auto start = Clock::now();
  HttpResponse r = HttpClient(fast(3)).post(
      server.url("/pings"), {}, "{}",
      [&](std::string_view) {
        ++calls;
        return true;
      },
      {}, Clock::now() + 500ms);
  EXPECT_TRUE(r.deadline_passed);
  EXPECT_FALSE(r.cancelled);
  EXPECT_EQ(r.status, 0);
  EXPECT_EQ(r.attempts, 1);
  EXPECT_GE(calls, 1) << "the pings did arrive";
  EXPECT_LT(since(start), 15000ms) << "not the 40 s the pings would last";
}

TEST_F(HttpTest, DeadlineCutsTheRetryWait) {
  server.http().Post("/", [this](const httplib::Request&, httplib::Response& res) {
    ++hits;
    res.status = 503;
    res.set_header("Retry-After", "30");
  });
  server.start();
  HttpOptions o = fast(3);
  o.backoff_max = 60000ms;
  const auto start = Clock::now();
  HttpResponse r = HttpClient(o).post(server.url("/"), {}, "{}", {}, {}, Clock::now() + 300ms);
  EXPECT_TRUE(r.deadline_passed);
  EXPECT_EQ(hits, 1);
  EXPECT_LT(since(start), 15000ms) << "not the 30 s the server asked for";
  // A deadline already past: no request at all reaches the server.
  r = HttpClient(o).post(server.url("/"), {}, "{}", {}, {}, Clock::now() - 1ms);
  EXPECT_TRUE(r.deadline_passed);
  EXPECT_EQ(hits, 1);
}
