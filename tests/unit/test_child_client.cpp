// ChildClient against tests/fake_runner.py, a stand-in that speaks the runner protocol without
// a GPU: timeouts, crashes, restarts, protocol errors and the sandbox, all in CI.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include "kagent/protocol/child_client.hpp"
#include "kagent/sandbox/process.hpp"
#include "test_util.hpp"

namespace kagent {
namespace {

using namespace std::chrono_literals;
using json = nlohmann::json;
using Failure = ChildReply::Failure;
using Clock = std::chrono::steady_clock;

using test::ScopedEnv;

class ChildClientTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (find_in_path("python3").empty()) GTEST_SKIP() << "python3 not found: the fake runner needs it";
  }
};

ChildOptions fake_options() {
  ChildOptions o;
  o.runner_path = (test::source_dir() / "tests" / "fake_runner.py").string();
  o.start_timeout = 10s;
  return o;
}

ChildReply send(ChildClient& c, json req, std::chrono::milliseconds timeout = 10s) {
  return c.request(std::move(req), timeout);
}

ChildReply ping(ChildClient& c) {
  return send(c, {{"cmd", "ping"}});
}

size_t open_fds() {
  size_t n = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator("/proc/self/fd")) ++n;
  return n;
}

// True once pid names no process at all (reaped; a zombie still answers kill(pid, 0)).
bool reaped(pid_t pid) {
  return kill(pid, 0) != 0 && errno == ESRCH;
}

// True once pid is dead: gone, or a zombie waiting for a parent that is not us (a grandchild
// reparented to an init that may be slow to reap).
bool dead(pid_t pid) {
  for (auto until = Clock::now() + 2s; Clock::now() < until; std::this_thread::sleep_for(10ms)) {
    if (reaped(pid)) return true;
    std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
    std::string all((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
    auto close_paren = all.rfind(')');
    if (close_paren != std::string::npos && close_paren + 2 < all.size() && all[close_paren + 2] == 'Z') return true;
  }
  return false;
}

bool has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

TEST_F(ChildClientTest, HelloParsedAndSandboxWarningTaken) {
  ChildClient c(fake_options());
  EXPECT_FALSE(c.running());
  auto r = ping(c);
  ASSERT_TRUE(r.ok()) << r.message;
  EXPECT_TRUE(c.running());
  EXPECT_EQ(c.starts(), 1);
  EXPECT_EQ(c.hello().value("hello", ""), "kagent-runner");
  EXPECT_EQ(c.hello().value("version", ""), "fake");
  EXPECT_EQ(c.hello().value("pid", -1), c.pid());
  EXPECT_EQ(c.sandbox_warning(), "fake runner: no namespace");
}

TEST_F(ChildClientTest, PingRoundTripsWithIncreasingIds) {
  ChildClient c(fake_options());
  auto a = ping(c);
  pid_t pid = c.pid();
  auto b = ping(c);
  ASSERT_TRUE(a.ok()) << a.message;
  ASSERT_TRUE(b.ok()) << b.message;
  EXPECT_EQ(a.body["ok"], true);
  EXPECT_EQ(a.body["id"], 1);
  EXPECT_EQ(b.body["id"], 2);
  EXPECT_EQ(c.pid(), pid);  // kept warm
  EXPECT_EQ(c.starts(), 1);
}

// A child that died while it waited (started ahead of its use) is seen as gone, reaped, and the next
// request starts a fresh one instead of failing on the dead one.
TEST_F(ChildClientTest, AliveSeesAChildThatDiedWhileItWaited) {
  ChildClient c(fake_options());
  EXPECT_FALSE(c.alive()) << "nothing started yet";
  ASSERT_TRUE(ping(c).ok());
  EXPECT_TRUE(c.alive());
  ::kill(c.pid(), SIGKILL);
  for (int i = 0; i < 200 && c.alive(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_FALSE(c.alive());
  EXPECT_FALSE(c.running());
  auto again = ping(c);
  EXPECT_TRUE(again.ok()) << again.message;
  EXPECT_EQ(c.starts(), 2);
}

TEST_F(ChildClientTest, NeedMessagesAreAnsweredInTheMiddleOfARequest) {
  ChildClient c(fake_options());
  std::vector<int> asked;
  auto r = c.request({{"cmd", "need"}, {"count", 3}}, 10s, [&](const nlohmann::json& need) -> nlohmann::json {
    asked.push_back(need.at("trial").get<int>());
    return {{"tensors", need.at("trial").get<int>() * 10}};
  });
  ASSERT_TRUE(r.ok()) << r.message;
  EXPECT_EQ(asked, (std::vector<int>{0, 1, 2}));
  ASSERT_EQ(r.body["answers"].size(), 3u);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(r.body["answers"][i]["tensors"], i * 10);
    EXPECT_EQ(r.body["answers"][i]["id"], r.body["id"]);  // answers carry the request's id
  }
  EXPECT_TRUE(ping(c).ok());  // still in step
}

TEST_F(ChildClientTest, NeedWithoutHandlerIsProtocolFailure) {
  ChildClient c(fake_options());
  auto r = c.request({{"cmd", "need"}}, 10s);
  EXPECT_EQ(r.failure, ChildReply::Failure::protocol);
  EXPECT_TRUE(has(r.message, "asked for \"trial\"")) << r.message;
  EXPECT_FALSE(c.running());
  EXPECT_TRUE(ping(c).ok());  // a fresh runner
}

TEST_F(ChildClientTest, TimeSpentAnsweringDoesNotCountAgainstTheRunner) {
  ChildClient c(fake_options());
  auto r = c.request({{"cmd", "need"}, {"count", 2}}, 1s, [](const nlohmann::json&) -> nlohmann::json {
    std::this_thread::sleep_for(700ms);  // 1.4 s in all, over the 1 s limit
    return {{"tensors", 0}};
  });
  EXPECT_TRUE(r.ok()) << r.message;
}

TEST_F(ChildClientTest, HandlerExceptionStopsTheWaitingRunner) {
  ChildClient c(fake_options());
  EXPECT_THROW(c.request({{"cmd", "need"}}, 10s,
                         [](const nlohmann::json&) -> nlohmann::json { throw std::runtime_error("server died"); }),
               std::runtime_error);
  EXPECT_FALSE(c.running());
  EXPECT_TRUE(ping(c).ok());
}

TEST_F(ChildClientTest, HangTimesOutNamesPhaseAndKillsTheGroup) {
  ChildClient c(fake_options());
  ASSERT_TRUE(ping(c).ok());
  pid_t old = c.pid();
  auto t0 = Clock::now();
  auto r = send(c, {{"cmd", "hang"}, {"spawn", true}, {"phase", "launch 3: matmul_tiled"}}, 1000ms);
  auto elapsed = Clock::now() - t0;
  EXPECT_EQ(r.failure, Failure::timeout);
  EXPECT_LT(elapsed, 2000ms);
  EXPECT_GE(elapsed, 900ms);
  EXPECT_TRUE(has(r.message, "timed out after 1.0 s during: launch 3: matmul_tiled")) << r.message;
  EXPECT_EQ(r.last_phase, "launch 3: matmul_tiled");
  EXPECT_FALSE(c.running());
  EXPECT_TRUE(reaped(old)) << "the runner is still there or a zombie";
  // The grandchild it started shares its process group and must be dead too.
  auto at = r.stderr_tail.find("child-pid: ");
  ASSERT_NE(at, std::string::npos) << r.stderr_tail;
  pid_t grandchild = std::stoi(r.stderr_tail.substr(at + 11));
  bool grandchild_dead = dead(grandchild);
  EXPECT_TRUE(grandchild_dead) << "grandchild " << grandchild << " survived the timeout";
  if (!grandchild_dead) kill(grandchild, SIGKILL);  // do not leave it behind when this test fails

  auto next = ping(c);
  ASSERT_TRUE(next.ok()) << next.message;
  EXPECT_NE(c.pid(), old);
  EXPECT_EQ(c.starts(), 2);
}

TEST_F(ChildClientTest, HangWithoutPhaseSaysSo) {
  ChildClient c(fake_options());
  auto r = send(c, {{"cmd", "hang"}}, 300ms);
  EXPECT_EQ(r.failure, Failure::timeout);
  EXPECT_TRUE(has(r.message, "timed out after 0.3 s before any phase was reported")) << r.message;
}

TEST_F(ChildClientTest, CrashNamesSignalAndPhase) {
  ChildClient c(fake_options());
  ASSERT_TRUE(ping(c).ok());
  pid_t old = c.pid();
  auto r = send(c, {{"cmd", "crash"}, {"phase", "launch 1: bad_kernel"}});
  EXPECT_EQ(r.failure, Failure::crashed);
  EXPECT_TRUE(has(r.message, strsignal(SIGSEGV))) << r.message;
  EXPECT_TRUE(has(r.message, "during: launch 1: bad_kernel")) << r.message;
  EXPECT_EQ(r.last_phase, "launch 1: bad_kernel");
  EXPECT_TRUE(reaped(old));
  auto next = ping(c);
  ASSERT_TRUE(next.ok()) << next.message;
  EXPECT_NE(c.pid(), old);
  EXPECT_EQ(c.starts(), 2);
}

TEST_F(ChildClientTest, ExitCodeReported) {
  ChildClient c(fake_options());
  auto r = send(c, {{"cmd", "exit"}, {"code", 3}});
  EXPECT_EQ(r.failure, Failure::crashed);
  EXPECT_TRUE(has(r.message, "exited with code 3")) << r.message;
  EXPECT_TRUE(has(r.message, "before any phase was reported")) << r.message;
  EXPECT_FALSE(c.running());
  EXPECT_TRUE(ping(c).ok());
}

TEST_F(ChildClientTest, StickyErrorRestartsOnNextRequest) {
  ChildClient c(fake_options());
  auto r = send(c, {{"cmd", "sticky"}});
  ASSERT_TRUE(r.ok()) << r.message;  // the reply itself arrived: the runner's error is in the body
  EXPECT_EQ(r.body["ok"], false);
  EXPECT_EQ(r.body["error"], "illegal address");
  pid_t old = c.pid();
  auto next = ping(c);
  ASSERT_TRUE(next.ok()) << next.message;
  EXPECT_NE(c.pid(), old);
  EXPECT_EQ(c.starts(), 2);
  EXPECT_TRUE(reaped(old));
}

TEST_F(ChildClientTest, BadJsonIsProtocolFailureThenRecovers) {
  ChildClient c(fake_options());
  ASSERT_TRUE(ping(c).ok());
  pid_t old = c.pid();
  auto r = send(c, {{"cmd", "badjson"}});
  EXPECT_EQ(r.failure, Failure::protocol);
  EXPECT_TRUE(has(r.message, "not json")) << r.message;
  EXPECT_TRUE(reaped(old));
  auto next = ping(c);
  ASSERT_TRUE(next.ok()) << next.message;
  EXPECT_NE(c.pid(), old);
  EXPECT_EQ(c.starts(), 2);
}

TEST_F(ChildClientTest, WrongIdIsProtocolFailureThenRecovers) {
  ChildClient c(fake_options());
  ASSERT_TRUE(ping(c).ok());
  pid_t old = c.pid();
  auto r = send(c, {{"cmd", "wrongid"}});
  EXPECT_EQ(r.failure, Failure::protocol);
  EXPECT_TRUE(has(r.message, "id 1002 to request 2")) << r.message;
  auto next = ping(c);
  ASSERT_TRUE(next.ok()) << next.message;
  EXPECT_NE(c.pid(), old);
  EXPECT_EQ(next.body["id"], 3);
}

TEST_F(ChildClientTest, NonObjectRequestIsRejectedWithoutStarting) {
  ChildClient c(fake_options());
  auto r = send(c, json::array({1, 2}));
  EXPECT_EQ(r.failure, Failure::protocol);
  EXPECT_EQ(c.starts(), 0);
}

TEST_F(ChildClientTest, StderrTailIsBoundedAndExcludesPhases) {
  ChildClient c(fake_options());
  auto r = send(c, {{"cmd", "log"}, {"lines", 25}, {"phase", "compare outputs"}});
  ASSERT_TRUE(r.ok()) << r.message;
  EXPECT_EQ(r.last_phase, "compare outputs");
  EXPECT_FALSE(has(r.stderr_tail, "kagent-phase")) << r.stderr_tail;
  EXPECT_EQ(std::count(r.stderr_tail.begin(), r.stderr_tail.end(), '\n'), 19) << r.stderr_tail;
  EXPECT_TRUE(r.stderr_tail.starts_with("log line 6\n")) << r.stderr_tail;
  EXPECT_TRUE(r.stderr_tail.ends_with("log line 25")) << r.stderr_tail;
  auto quiet = ping(c);
  ASSERT_TRUE(quiet.ok());
  EXPECT_EQ(quiet.stderr_tail, "");  // each reply carries its own request's lines
  EXPECT_EQ(quiet.last_phase, "");
}

TEST_F(ChildClientTest, SandboxedEnvironmentIsScrubbed) {
  ScopedEnv key("OPENAI_API_KEY", "secret");
  ScopedEnv foo("FOO", "bar");
  auto o = fake_options();
  o.gpu = 5;
  ChildClient c(o);
  auto r = send(c, {{"cmd", "env"}});
  ASSERT_TRUE(r.ok()) << r.message;
  const json& env = r.body["env"];
  EXPECT_FALSE(env.contains("OPENAI_API_KEY"));
  EXPECT_FALSE(env.contains("FOO"));
  EXPECT_TRUE(env.contains("PATH"));
  EXPECT_EQ(env.value("KAGENT_GPU", ""), "5");
  EXPECT_EQ(env.value("LANG", ""), "C");
}

TEST_F(ChildClientTest, UnsandboxedRunnerInheritsEnvironmentButOwnsItsGroup) {
  ScopedEnv foo("FOO", "bar");
  ScopedEnv gpu("KAGENT_GPU", "9");
  auto o = fake_options();
  o.sandbox = false;
  o.gpu = 1;
  ChildClient c(o);
  auto r = send(c, {{"cmd", "env"}});
  ASSERT_TRUE(r.ok()) << r.message;
  EXPECT_EQ(r.body["env"].value("FOO", ""), "bar");
  EXPECT_EQ(r.body["env"].value("KAGENT_GPU", ""), "1");
  auto l = send(c, {{"cmd", "limits"}});
  ASSERT_TRUE(l.ok()) << l.message;
  EXPECT_EQ(l.body["pgid"], l.body["pid"]);  // a timeout's kill(-pgid) must not reach kagent
}

TEST_F(ChildClientTest, SandboxLimitsReachTheRunner) {
  ChildClient c(fake_options());
  auto r = send(c, {{"cmd", "limits"}});
  ASSERT_TRUE(r.ok()) << r.message;
  const json& b = r.body;
  EXPECT_EQ(b["core"], json::array({0, 0}));
  // Python reports RLIM_INFINITY as -1, which must not appear here.
  for (const char* name : {"fsize", "nproc"}) {
    for (int i = 0; i < 2; ++i) EXPECT_GE(b[name][i].get<long long>(), 0) << name;
  }
  EXPECT_LE(b["fsize"][0].get<long long>(), 1LL << 30);
  EXPECT_LE(b["fsize"][1].get<long long>(), 1LL << 30);
  EXPECT_LE(b["nproc"][0].get<long long>(), 4096);
  EXPECT_LE(b["nproc"][1].get<long long>(), 4096);
  EXPECT_EQ(b["no_new_privs"], 1);
  EXPECT_EQ(b["pgid"], b["pid"]);
  EXPECT_EQ(b["pid"], c.pid());
  EXPECT_EQ(c.hello()["sandbox"]["no_new_privs"], true);
}

TEST_F(ChildClientTest, StartTimeoutWithoutHello) {
  auto o = fake_options();
  o.args = {"--no-hello"};
  o.start_timeout = 300ms;
  ChildClient c(o);
  auto t0 = Clock::now();
  auto r = ping(c);
  EXPECT_LT(Clock::now() - t0, 2000ms);
  EXPECT_EQ(r.failure, Failure::start);
  EXPECT_TRUE(has(r.message, "no hello line within 0.3 s")) << r.message;
  EXPECT_FALSE(c.running());
  EXPECT_EQ(c.starts(), 0);
}

TEST_F(ChildClientTest, MissingRunnerIsStartFailure) {
  auto o = fake_options();
  o.runner_path = "/nonexistent/kagent-runner";
  ChildClient c(o);
  auto r = ping(c);
  EXPECT_EQ(r.failure, Failure::start);
  EXPECT_TRUE(has(r.message, "/nonexistent/kagent-runner")) << r.message;
}

TEST_F(ChildClientTest, RunnerExitingBeforeHelloIsStartFailure) {
  test::TempDir dir;
  auto script = dir.write("runner.sh", "#!/bin/sh\necho 'cannot open the driver' >&2\nexit 4\n");
  std::filesystem::permissions(script, std::filesystem::perms::owner_all);
  auto o = fake_options();
  o.runner_path = script.string();
  ChildClient c(o);
  auto r = ping(c);
  EXPECT_EQ(r.failure, Failure::start);
  EXPECT_TRUE(has(r.message, "exited with code 4 before its hello line")) << r.message;
  EXPECT_TRUE(has(r.message, "cannot open the driver")) << r.message;  // the stderr tail
  EXPECT_EQ(r.stderr_tail, "cannot open the driver");
  EXPECT_FALSE(c.running());
}

TEST_F(ChildClientTest, MalformedHelloIsStartFailure) {
  test::TempDir dir;
  auto script = dir.write("runner.sh", "#!/bin/sh\necho '{\"hello\": \"someone-else\"}'\nsleep 100\n");
  std::filesystem::permissions(script, std::filesystem::perms::owner_all);
  auto o = fake_options();
  o.runner_path = script.string();
  ChildClient c(o);
  auto r = ping(c);
  EXPECT_EQ(r.failure, Failure::start);
  EXPECT_TRUE(has(r.message, "malformed hello")) << r.message;
  EXPECT_FALSE(c.running());
}

// A runner that exited between requests: the next write meets a closed pipe. kagent must get
// EPIPE (not die of SIGPIPE) and report the exit.
TEST_F(ChildClientTest, WriteToDeadRunnerIsACrashNotSigpipe) {
  ChildClient c(fake_options());
  ASSERT_TRUE(send(c, {{"cmd", "quit"}}).ok());
  pid_t old = c.pid();
  // Wait until it has exited (a zombie until the client reaps it).
  for (auto until = Clock::now() + 5s; Clock::now() < until; std::this_thread::sleep_for(10ms)) {
    siginfo_t info{};
    if (waitid(P_PID, static_cast<id_t>(old), &info, WEXITED | WNOHANG | WNOWAIT) == 0 && info.si_pid == old) break;
  }
  auto r = ping(c);
  EXPECT_EQ(r.failure, Failure::crashed);
  EXPECT_TRUE(has(r.message, "exited with code 0")) << r.message;
  sigset_t pending;
  sigpending(&pending);
  EXPECT_EQ(sigismember(&pending, SIGPIPE), 0) << "SIGPIPE left pending";
  EXPECT_TRUE(ping(c).ok());
}

TEST_F(ChildClientTest, DestructorLeavesNoZombieAndNoFds) {
  size_t before = open_fds();
  pid_t pid = -1;
  auto t0 = Clock::now();
  {
    ChildClient c(fake_options());
    ASSERT_TRUE(ping(c).ok());
    pid = c.pid();
    EXPECT_GT(open_fds(), before);
  }
  EXPECT_LT(Clock::now() - t0, 1900ms);  // the runner exits on stdin EOF: no grace period spent
  EXPECT_TRUE(reaped(pid));
  EXPECT_EQ(waitpid(pid, nullptr, WNOHANG), -1);
  EXPECT_EQ(open_fds(), before);
}

TEST_F(ChildClientTest, NoFdLeakAcrossFailuresAndRestarts) {
  size_t before = open_fds();
  {
    ChildClient c(fake_options());
    EXPECT_EQ(send(c, {{"cmd", "hang"}}, 200ms).failure, Failure::timeout);
    EXPECT_EQ(send(c, {{"cmd", "crash"}}).failure, Failure::crashed);
    EXPECT_EQ(send(c, {{"cmd", "badjson"}}).failure, Failure::protocol);
    EXPECT_TRUE(send(c, {{"cmd", "sticky"}}).ok());
    EXPECT_TRUE(ping(c).ok());
    EXPECT_EQ(c.starts(), 5);
  }
  {
    auto o = fake_options();
    o.args = {"--no-hello"};
    o.start_timeout = 100ms;
    ChildClient c(o);
    EXPECT_EQ(ping(c).failure, Failure::start);
  }
  EXPECT_EQ(open_fds(), before);
}

}  // namespace
}  // namespace kagent
