// sandbox::spawn_jailed: the returned pid behaves like the program (exit status, signals, kill of
// the whole jail), set-up failures are one line and kSetupFailedExit, and the pid namespace is
// optional. Skipped where the kernel refuses the namespaces.
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include "kagent/sandbox/jail.hpp"
#include "kagent/sandbox/process.hpp"

namespace kagent {
namespace {

using namespace sandbox;

// A jail on the host's file system (no mount namespace), so that /bin/sh is there.
JailSpec host_fs_jail(bool pid_namespace) {
  JailSpec spec;
  spec.name = "test jail";
  spec.namespaces.mount = false;
  spec.namespaces.pid = pid_namespace;
  spec.environment.names = {"PATH"};
  return spec;
}

struct Child {
  pid_t pid = -1;
  int out = -1;  // stdout and stderr
};

// Starts `script` under sh; GTEST_SKIP()s the caller (returns pid -1) where namespaces are refused.
Child start(const JailSpec& spec, const std::string& script, std::string* skip) {
  Child c;
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) return c;
  try {
    c.pid = spawn_jailed(spec, {{"/bin/sh", "-c", script}, {}, -1, fds[1], fds[1]});
  } catch (const JailRefused& e) {
    *skip = e.what();
  }
  close(fds[1]);
  c.out = fds[0];
  return c;
}

std::string read_all(int fd) {
  std::string out;
  char buf[4096];
  ssize_t n;
  while ((n = read(fd, buf, sizeof buf)) > 0) out.append(buf, static_cast<size_t>(n));
  close(fd);
  return out;
}

std::string read_line(int fd) {
  std::string line;
  char c;
  while (read(fd, &c, 1) == 1 && c != '\n') line += c;
  return line;
}

int wait_status(pid_t pid) {
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return status;
}

class JailTest : public ::testing::TestWithParam<bool> {};  // the parameter: a pid namespace

TEST_P(JailTest, WaitpidGivesTheProgramsExitStatus) {
  std::string skip;
  Child c = start(host_fs_jail(GetParam()), "echo out; echo err >&2; exit 7", &skip);
  if (c.pid < 0) GTEST_SKIP() << skip;
  std::string out = read_all(c.out);
  int status = wait_status(c.pid);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 7);
  EXPECT_EQ(out, "out\nerr\n");
}

TEST_P(JailTest, SignalsReachTheProgram) {
  std::string skip;
  Child c = start(host_fs_jail(GetParam()),
                  "trap 'echo got-term; exit 42' TERM; echo ready; while :; do sleep 0.05; done", &skip);
  if (c.pid < 0) GTEST_SKIP() << skip;
  ASSERT_EQ(read_line(c.out), "ready");
  kill(c.pid, SIGTERM);  // forwarded by the init, where there is one
  int status = wait_status(c.pid);
  std::string out = read_all(c.out);
  ASSERT_TRUE(WIFEXITED(status)) << status;
  EXPECT_EQ(WEXITSTATUS(status), 42);
  EXPECT_NE(out.find("got-term"), std::string::npos);
}

TEST_P(JailTest, AProgramKilledBySignalIs128PlusN) {
  std::string skip;
  Child c = start(host_fs_jail(GetParam()), "kill -KILL $$", &skip);
  if (c.pid < 0) GTEST_SKIP() << skip;
  read_all(c.out);
  int status = wait_status(c.pid);
  if (GetParam()) {  // through the init
    ASSERT_TRUE(WIFEXITED(status));
    EXPECT_EQ(WEXITSTATUS(status), 128 + SIGKILL);
  } else {
    ASSERT_TRUE(WIFSIGNALED(status));
    EXPECT_EQ(WTERMSIG(status), SIGKILL);
  }
}

TEST_P(JailTest, KillOfTheGroupEndsEverything) {
  std::string skip;
  Child c = start(host_fs_jail(GetParam()), "sleep 100.731 & echo ready; sleep 100.732", &skip);
  if (c.pid < 0) GTEST_SKIP() << skip;
  ASSERT_EQ(read_line(c.out), "ready");
  kill(-c.pid, SIGKILL);
  wait_status(c.pid);
  // Every holder of the pipe is gone: EOF.
  read_all(c.out);
  SUCCEED();
}

TEST_P(JailTest, ASetUpFailureIsOneLineAndTheSharedExitCode) {
  JailSpec spec = host_fs_jail(GetParam());
  spec.working_directory = "/nonexistent-kagent-dir";
  std::string skip;
  Child c = start(spec, "echo ran", &skip);
  if (c.pid < 0) GTEST_SKIP() << skip;
  std::string out = read_all(c.out);
  int status = wait_status(c.pid);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), kSetupFailedExit);
  EXPECT_EQ(out, "kagent sandbox: test jail: chdir /nonexistent-kagent-dir: No such file or directory (errno 2)\n");
}

TEST_P(JailTest, OwnNamespacesAndNoCapabilities) {
  std::string skip;
  Child c = start(
      host_fs_jail(GetParam()),
      "readlink /proc/self/ns/ipc /proc/self/ns/net /proc/self/ns/pid; grep CapEff /proc/self/status; echo $$", &skip);
  if (c.pid < 0) GTEST_SKIP() << skip;
  std::string out = read_all(c.out);
  wait_status(c.pid);
  auto ns = [](const char* which) {
    char buf[128];
    ssize_t n = readlink((std::string("/proc/self/ns/") + which).c_str(), buf, sizeof buf);
    return n > 0 ? std::string(buf, static_cast<size_t>(n)) : std::string("?");
  };
  EXPECT_EQ(out.find(ns("ipc")), std::string::npos) << out;
  EXPECT_EQ(out.find(ns("net")), std::string::npos) << out;
  EXPECT_EQ(out.find(ns("pid")) == std::string::npos, GetParam()) << out;
  EXPECT_NE(out.find("CapEff:\t0000000000000000"), std::string::npos) << out;
  // Without a pid namespace the pid is the program's own.
  if (!GetParam()) {
    EXPECT_NE(out.find("\n" + std::to_string(c.pid) + "\n"), std::string::npos) << out;
  }
}

INSTANTIATE_TEST_SUITE_P(PidNamespace, JailTest, ::testing::Values(true, false),
                         [](const auto& info) { return info.param ? "WithInit" : "NoPidNamespace"; });

TEST(Jail, TheInitIsBuilt) {
  EXPECT_FALSE(jail_init_path().empty());
}

}  // namespace
}  // namespace kagent
