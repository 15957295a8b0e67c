// `kagent serve` as a process: without a GPU it starts and answers 503 naming why (health and
// evaluations), still says what is wrong with a bad request, stops on SIGTERM with exit 0, and
// refuses to listen beyond this machine without a bearer token.
#include <gtest/gtest.h>
#include <httplib.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>

#include <fstream>
#include <regex>
#include <sstream>
#include <thread>

#include <fcntl.h>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "kagent/common/files.hpp"
#include "kagent/sandbox/process.hpp"
#include "test_util.hpp"

extern char** environ;

using namespace kagent;
using namespace std::chrono_literals;

namespace {

// `kagent serve ARGS` in the background with its output in a file; the port it printed.
class ServeProcess {
 public:
  ServeProcess(const std::vector<std::string>& args, const std::vector<std::string>& env,
               const std::filesystem::path& log)
      : log_(log) {
    std::vector<std::string> argv = {"serve"};
    argv.insert(argv.end(), args.begin(), args.end());
    pid_ = test::spawn_kagent(env, argv, log.string(), /*both=*/true);
  }
  ~ServeProcess() {
    if (pid_ > 0 && !reaped_) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
  }
  // The port from "listening on http://HOST:PORT", waiting up to 60 s; 0 if it never came.
  int port() {
    static const std::regex re(R"(listening on http://[^:]+:([0-9]+))");
    for (int i = 0; i < 600; ++i) {
      std::string text = output();
      std::smatch m;
      if (std::regex_search(text, m, re)) return std::stoi(m[1].str());
      int status = 0;
      if (::waitpid(pid_, &status, WNOHANG) == pid_) {
        reaped_ = true;
        return 0;
      }
      std::this_thread::sleep_for(100ms);
    }
    return 0;
  }
  std::string output() const {
    std::ifstream in(log_);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }
  // SIGTERM, then the exit code (-1 if it did not end within 30 s or ended by a signal).
  int terminate() {
    ::kill(pid_, SIGTERM);
    for (int i = 0; i < 300; ++i) {
      int status = 0;
      if (::waitpid(pid_, &status, WNOHANG) == pid_) {
        reaped_ = true;
        return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
      }
      std::this_thread::sleep_for(100ms);
    }
    return -1;
  }

 private:
  std::filesystem::path log_;
  pid_t pid_ = -1;
  bool reaped_ = false;
};

}  // namespace

TEST(ServeCli, WithoutAGpuAnswers503NamingWhy) {
  test::TempDir tmp;
  tmp.write("root/level1/19_ReLU.py", "# problem\n");
  // CUDA_VISIBLE_DEVICES empty hides every GPU, so a machine with one behaves as CI's does.
  ServeProcess p({"--problems-root", (tmp / "root").string(), "--port", "0"},
                 {"CUDA_VISIBLE_DEVICES=", "KAGENT_CACHE_DIR=" + (tmp / "cache").string()}, tmp / "serve.log");
  const int port = p.port();
  ASSERT_GT(port, 0) << p.output();
  httplib::Client c("127.0.0.1", port);
  auto h = c.Get("/health");
  ASSERT_TRUE(h) << httplib::to_string(h.error());
  EXPECT_EQ(h->status, 503);
  auto hj = nlohmann::json::parse(h->body);
  EXPECT_EQ(hj["status"], "unavailable");
  EXPECT_NE(hj["reason"].get<std::string>().find("no GPU"), std::string::npos) << h->body;
  auto r = c.Post("/v1/evaluate", R"({"source": "x", "kind": "plan", "problem": "level1/19"})", "application/json");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 503);
  EXPECT_NE(r->body.find("no GPU"), std::string::npos) << r->body;
  auto bad = c.Post("/v1/evaluate", R"({"source": "x", "kind": "plan", "problem": "../x"})", "application/json");
  EXPECT_EQ(bad->status, 400);
  EXPECT_NE(c.Get("/metrics")->body.find("kagent_up 0"), std::string::npos);
  EXPECT_EQ(p.terminate(), 0) << p.output();
  EXPECT_NE(p.output().find("answering 503"), std::string::npos) << p.output();
}

TEST(ServeCli, ListeningBeyondThisMachineNeedsAToken) {
  test::TempDir tmp;
  std::filesystem::create_directories(tmp / "root");
  const std::string kagent = (test::binary_dir() / "kagent").string();
  auto open = run_capture({kagent, "serve", "--problems-root", (tmp / "root").string(), "--host", "0.0.0.0"}, 60s);
  EXPECT_EQ(open.exit_code, 2) << open.output;
  EXPECT_NE(open.output.find("--token-env"), std::string::npos) << open.output;
  auto unset = run_capture({"/usr/bin/env", "-u", "KAGENT_TEST_NO_SUCH_TOKEN", kagent, "serve", "--problems-root",
                            (tmp / "root").string(), "--token-env", "KAGENT_TEST_NO_SUCH_TOKEN"},
                           60s);
  EXPECT_EQ(unset.exit_code, 2) << unset.output;
  EXPECT_NE(unset.output.find("KAGENT_TEST_NO_SUCH_TOKEN"), std::string::npos) << unset.output;
  auto no_root = run_capture({kagent, "serve"}, 60s);
  EXPECT_EQ(no_root.exit_code, 2) << no_root.output;
}

TEST(ServeCli, AnUnknownPresetIsAUsageErrorNamingThePresets) {
  test::TempDir tmp;
  std::filesystem::create_directories(tmp / "root");
  const std::string kagent = (test::binary_dir() / "kagent").string();
  auto r = run_capture({kagent, "serve", "--problems-root", (tmp / "root").string(), "--preset", "fast"}, 60s);
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("--preset fast: expected one of default, training"), std::string::npos) << r.output;
}

// The warm problems' bounds are flags, checked for range and said in the "listening on" line, as
// are the queue's bounds and the largest batch.
TEST(ServeCli, WarmProblemsAndQueueBoundsAreSaid) {
  test::TempDir tmp;
  std::filesystem::create_directories(tmp / "root");
  const std::string kagent = (test::binary_dir() / "kagent").string();
  for (std::vector<std::string> bad : {std::vector<std::string>{"--warm-problems", "0"},
                                       {"--warm-problems", "257"},
                                       {"--warm-memory", "0.01"},
                                       {"--warm-memory", "0.96"},
                                       {"--spare-servers", "9"},
                                       {"--spare-servers", "-1"},
                                       {"--queue-mb", "0"}}) {
    std::vector<std::string> argv = {kagent, "serve", "--problems-root", (tmp / "root").string()};
    argv.insert(argv.end(), bad.begin(), bad.end());
    auto r = run_capture(argv, 60s);
    EXPECT_EQ(r.exit_code, 2) << bad[0] << " " << bad[1] << ": " << r.output;
    EXPECT_NE(r.output.find(bad[0]), std::string::npos) << r.output;
  }
  ServeProcess p({"--problems-root", (tmp / "root").string(), "--port", "0", "--warm-problems", "8", "--warm-memory",
                  "0.3", "--queue-mb", "256", "--spare-servers", "2"},
                 {"CUDA_VISIBLE_DEVICES=", "KAGENT_CACHE_DIR=" + (tmp / "cache").string()}, tmp / "serve.log");
  ASSERT_GT(p.port(), 0) << p.output();
  for (const char* said : {"queue 4096 / 256 MiB", "batches up to 1024",
                           "8 warm problem(s) per GPU within 0.3 of memory and 2 spare server(s)"})
    EXPECT_NE(p.output().find(said), std::string::npos) << said << "\n" << p.output();
  EXPECT_EQ(p.terminate(), 0) << p.output();
}

TEST(ServeCli, TokenFromTheEnvironment) {
  test::TempDir tmp;
  std::filesystem::create_directories(tmp / "root");
  ServeProcess p({"--problems-root", (tmp / "root").string(), "--port", "0", "--token-env", "KAGENT_TEST_TOKEN"},
                 {"CUDA_VISIBLE_DEVICES=", "KAGENT_TEST_TOKEN=tok-123", "KAGENT_CACHE_DIR=" + (tmp / "cache").string()},
                 tmp / "serve.log");
  const int port = p.port();
  ASSERT_GT(port, 0) << p.output();
  httplib::Client c("127.0.0.1", port);
  EXPECT_EQ(c.Get("/metrics")->status, 401);
  c.set_bearer_token_auth("tok-123");
  EXPECT_EQ(c.Get("/metrics")->status, 200);
  EXPECT_EQ(p.terminate(), 0) << p.output();
}

// The port is bound exclusively: a second service on it fails with exit 3 naming the address and
// the process that holds it, and the first goes on serving. A token no client could send is a usage error.
TEST(ServeCli, ASecondServiceOnABoundPortFailsAndABadTokenIsRefused) {
  test::TempDir tmp;
  std::filesystem::create_directories(tmp / "root");
  ServeProcess first({"--problems-root", (tmp / "root").string(), "--port", "0"},
                     {"CUDA_VISIBLE_DEVICES=", "KAGENT_CACHE_DIR=" + (tmp / "cache").string()}, tmp / "first.log");
  const int port = first.port();
  ASSERT_GT(port, 0) << first.output();
  const std::string kagent = (test::binary_dir() / "kagent").string();
  auto second = run_capture({"/usr/bin/env", "CUDA_VISIBLE_DEVICES=", kagent, "serve", "--problems-root",
                             (tmp / "root").string(), "--port", std::to_string(port)},
                            60s);
  EXPECT_EQ(second.exit_code, 3) << second.output;
  EXPECT_NE(second.output.find(fmt::format("127.0.0.1:{}", port)), std::string::npos) << second.output;
  EXPECT_NE(second.output.find("held by pid "), std::string::npos) << second.output;  // the first, by name
  EXPECT_NE(second.output.find("(kagent)"), std::string::npos) << second.output;
  httplib::Client c("127.0.0.1", port);
  auto h = c.Get("/health");
  ASSERT_TRUE(h);
  EXPECT_EQ(h->status, 503) << "the first service still answers (no GPU here)";
  EXPECT_EQ(first.terminate(), 0) << first.output();

  auto spaced = run_capture({"/usr/bin/env", "KAGENT_TEST_TOKEN=tok-123 ", kagent, "serve", "--problems-root",
                             (tmp / "root").string(), "--token-env", "KAGENT_TEST_TOKEN"},
                            60s);
  EXPECT_EQ(spaced.exit_code, 2) << spaced.output;
  EXPECT_NE(spaced.output.find("0x20"), std::string::npos) << spaced.output;
}
