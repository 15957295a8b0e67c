// Write confinement (sandbox/landlock.hpp) and kagent-sandbox-exec, the launcher of the ModelNew
// worker: writes only beneath --write directories, /dev and /proc/self, for the program and all it
// starts; reads and execution everywhere; its own network namespace; its exit codes. Tests that
// need Landlock skip with the reason on a kernel without it.
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include <linux/landlock.h>

#include <gtest/gtest.h>

#include "kagent/common/error.hpp"
#include "kagent/sandbox/landlock.hpp"
#include "kagent/sandbox/process.hpp"
#include "test_util.hpp"

// Older kernel headers (as landlock.cpp): the bits of ABI 2 and 3.
#ifndef LANDLOCK_ACCESS_FS_REFER
#define LANDLOCK_ACCESS_FS_REFER (1ULL << 13)
#endif
#ifndef LANDLOCK_ACCESS_FS_TRUNCATE
#define LANDLOCK_ACCESS_FS_TRUNCATE (1ULL << 14)
#endif

namespace kagent {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

fs::path launcher() {
  return test::binary_dir() / "kagent-sandbox-exec";
}

// Why Landlock cannot be tested here, or nullopt when it can.
std::optional<std::string> no_landlock_reason() {
  std::ifstream lsm("/sys/kernel/security/lsm");
  std::string active;
  if (lsm && std::getline(lsm, active) && active.find("landlock") == std::string::npos)
    return "landlock is not among the active LSMs (/sys/kernel/security/lsm: " + active + ")";
  if (sandbox::landlock_abi() < 1) return std::string("no Landlock on this kernel: ") + std::strerror(errno);
  return std::nullopt;
}

#define SKIP_WITHOUT_LANDLOCK()                                \
  do {                                                         \
    if (auto why = no_landlock_reason()) GTEST_SKIP() << *why; \
  } while (0)

ProcessResult sandbox_exec(const std::vector<std::string>& args) {
  std::vector<std::string> argv = {launcher().string()};
  argv.insert(argv.end(), args.begin(), args.end());
  return run_capture(argv, 30s);
}

ProcessResult sandboxed_sh(const fs::path& writable, const std::string& script) {
  return sandbox_exec({"--write", writable.string(), "--", "/bin/sh", "-c", script});
}

// Runs `body` in a forked child and returns its text: restrict_writes binds the process that calls
// it, which must never be the test process.
std::string in_child(const std::function<std::string()>& body) {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) return "pipe failed";
  pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    std::string out;
    try {
      out = body();
    } catch (const std::exception& e) {
      out = std::string("threw: ") + e.what();
    }
    for (size_t at = 0; at < out.size();) {
      ssize_t n = write(fds[1], out.data() + at, out.size() - at);
      if (n <= 0) break;
      at += static_cast<size_t>(n);
    }
    _exit(0);
  }
  close(fds[1]);
  std::string out;
  char buf[4096];
  ssize_t n;
  while ((n = read(fds[0], buf, sizeof buf)) > 0) out.append(buf, static_cast<size_t>(n));
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) out += " [child failed]";
  return out;
}

// A folder with ok/ (given to --write) and no/ (not).
struct Dirs {
  test::TempDir tmp;
  fs::path ok = tmp / "ok";
  fs::path no = tmp / "no";
  Dirs() {
    fs::create_directories(ok);
    fs::create_directories(no);
  }
};

TEST(Landlock, WriteRightsFollowTheAbi) {
  EXPECT_EQ(sandbox::landlock_write_rights(0), 0ULL);
  const unsigned long long v1 = sandbox::landlock_write_rights(1);
  EXPECT_NE(v1 & LANDLOCK_ACCESS_FS_WRITE_FILE, 0ULL);
  EXPECT_NE(v1 & LANDLOCK_ACCESS_FS_MAKE_REG, 0ULL);
  EXPECT_NE(v1 & LANDLOCK_ACCESS_FS_REMOVE_FILE, 0ULL);
  EXPECT_EQ(v1 & LANDLOCK_ACCESS_FS_REFER, 0ULL);
  EXPECT_EQ(v1 & LANDLOCK_ACCESS_FS_TRUNCATE, 0ULL);
  const unsigned long long v2 = sandbox::landlock_write_rights(2);
  EXPECT_NE(v2 & LANDLOCK_ACCESS_FS_REFER, 0ULL);
  EXPECT_EQ(v2 & LANDLOCK_ACCESS_FS_TRUNCATE, 0ULL);
  for (int abi : {1, 3, 7}) {
    const unsigned long long v = sandbox::landlock_write_rights(abi);
    if (abi >= 3) {
      EXPECT_NE(v & LANDLOCK_ACCESS_FS_TRUNCATE, 0ULL) << abi;
    }
    // Reading and executing are never handled, so never restricted.
    EXPECT_EQ(v & (LANDLOCK_ACCESS_FS_EXECUTE | LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_READ_DIR), 0ULL)
        << abi;
  }
}

TEST(Landlock, MissingPathIsAnErrorNotAnEmptySandbox) {
  std::string out = in_child([] {
    try {
      sandbox::restrict_writes({"/dev", "/nonexistent/kagent-landlock-test"});
      return std::string("no error");
    } catch (const InputError& e) {
      return std::string("input error: ") + e.what();
    }
  });
  EXPECT_NE(out.find("input error: "), std::string::npos) << out;
  EXPECT_NE(out.find("/nonexistent/kagent-landlock-test"), std::string::npos) << out;
}

TEST(Landlock, FileIsNotAWritableDirectory) {
  test::TempDir tmp;
  fs::path file = tmp.write("plain", "x");
  std::string out = in_child([&] {
    try {
      sandbox::restrict_writes({file.string()});
      return std::string("no error");
    } catch (const InputError& e) {
      return std::string("input error: ") + e.what();
    }
  });
  EXPECT_NE(out.find("not a directory"), std::string::npos) << out;
}

TEST(Landlock, RestrictWritesConfinesTheCallingProcess) {
  SKIP_WITHOUT_LANDLOCK();
  Dirs d;
  std::string out = in_child([&] {
    sandbox::LandlockResult r = sandbox::restrict_writes({d.ok.string()});
    if (!r.enforced) return "not enforced: " + r.warning;
    std::string verdict = "abi " + std::to_string(r.abi);
    int fd = open((d.ok / "f").c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
    verdict += fd >= 0 ? "; ok writable" : std::string("; ok refused: ") + std::strerror(errno);
    if (fd >= 0) close(fd);
    fd = open((d.no / "f").c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
    verdict += fd >= 0 ? "; no writable" : std::string("; no refused: ") + std::strerror(errno);
    if (fd >= 0) close(fd);
    // Reading outside stays allowed.
    verdict += std::ifstream("/etc/passwd") ? "; read ok" : "; read refused";
    return verdict;
  });
  EXPECT_NE(out.find("; ok writable; no refused: Permission denied; read ok"), std::string::npos) << out;
  EXPECT_TRUE(fs::exists(d.ok / "f"));
  EXPECT_FALSE(fs::exists(d.no / "f"));
}

TEST(SandboxExec, WritesOnlyBeneathWriteDirectories) {
  SKIP_WITHOUT_LANDLOCK();
  Dirs d;
  ProcessResult r = sandboxed_sh(d.ok, "echo x > " + (d.ok / "f").string() + " && echo y > " + (d.no / "f").string());
  ASSERT_TRUE(r.started);
  EXPECT_NE(r.exit_code, 0) << r.output;
  EXPECT_TRUE(fs::exists(d.ok / "f")) << r.output;
  EXPECT_FALSE(fs::exists(d.no / "f")) << r.output;
  EXPECT_EQ(r.output.find("no Landlock"), std::string::npos) << r.output;
}

TEST(SandboxExec, DevNullAndReadsStayAllowed) {
  SKIP_WITHOUT_LANDLOCK();
  Dirs d;
  ProcessResult r = sandboxed_sh(d.ok, "echo x > /dev/null && cat /etc/passwd > /dev/null && echo done");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("done"), std::string::npos) << r.output;
}

TEST(SandboxExec, ChildrenAreConfinedToo) {
  SKIP_WITHOUT_LANDLOCK();
  Dirs d;
  const std::string inner =
      "/bin/sh -c 'echo y > " + (d.no / "f").string() + "'; /bin/sh -c 'echo x > " + (d.ok / "g").string() + "'";
  ProcessResult r = sandboxed_sh(d.ok, inner);
  ASSERT_TRUE(r.started);
  EXPECT_TRUE(fs::exists(d.ok / "g")) << r.output;
  EXPECT_FALSE(fs::exists(d.no / "f")) << r.output;
}

TEST(SandboxExec, RenameOutOfTheWritableDirIsRefused) {
  SKIP_WITHOUT_LANDLOCK();
  Dirs d;
  const std::string f = (d.ok / "f").string(), inside = (d.ok / "h").string(), out = (d.no / "f").string();
  // The rename inside succeeds (ABI 2's REFER), the one out of it fails (mv's copy fallback too).
  ProcessResult r = sandboxed_sh(
      d.ok, "echo x > " + f + " && mv " + f + " " + inside + " && mv " + inside + " " + out + "; echo rc=$?");
  EXPECT_FALSE(fs::exists(d.no / "f")) << r.output;
  if (sandbox::landlock_abi() >= 2) {
    EXPECT_TRUE(fs::exists(d.ok / "h")) << r.output;
  }
  EXPECT_EQ(r.output.find("rc=0"), std::string::npos) << r.output;
}

TEST(SandboxExec, RemovingOutsideIsRefused) {
  SKIP_WITHOUT_LANDLOCK();
  Dirs d;
  std::ofstream(d.no / "keep") << "x";
  ProcessResult r = sandboxed_sh(d.ok, "rm -f " + (d.no / "keep").string());
  EXPECT_NE(r.exit_code, 0) << r.output;
  EXPECT_TRUE(fs::exists(d.no / "keep")) << r.output;
}

TEST(SandboxExec, EntersANetworkNamespaceUnlessAskedNot) {
  Dirs d;
  std::error_code ec;
  const std::string mine = fs::read_symlink("/proc/self/ns/net", ec).string();
  ASSERT_FALSE(ec) << ec.message();
  ProcessResult in = sandbox_exec({"--write", d.ok.string(), "--", "readlink", "/proc/self/ns/net"});
  ASSERT_EQ(in.exit_code, 0) << in.output;
  if (in.output.find("no network namespace") != std::string::npos) {
    EXPECT_NE(in.output.find("kagent-sandbox-exec: warning: "), std::string::npos) << in.output;
  } else {
    EXPECT_EQ(in.output.find(mine), std::string::npos) << in.output;
  }
  ProcessResult out = sandbox_exec({"--write", d.ok.string(), "--no-netns", "--", "readlink", "/proc/self/ns/net"});
  ASSERT_EQ(out.exit_code, 0) << out.output;
  EXPECT_NE(out.output.find(mine), std::string::npos) << out.output;
}

TEST(SandboxExec, KeepsTheEnvironmentAndFindsProgramsInPath) {
  Dirs d;
  test::ScopedEnv v("KAGENT_SANDBOX_EXEC_TEST", "kept-value");
  ProcessResult r =
      sandbox_exec({"--write", d.ok.string(), "--no-netns", "--", "sh", "-c", "echo \"$KAGENT_SANDBOX_EXEC_TEST\""});
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("kept-value"), std::string::npos) << r.output;
}

TEST(SandboxExec, RequireLandlock) {
  Dirs d;
  ProcessResult r = sandbox_exec({"--write", d.ok.string(), "--no-netns", "--require-landlock", "--", "true"});
  if (no_landlock_reason()) {
    EXPECT_EQ(r.exit_code, 3) << r.output;
    EXPECT_NE(r.output.find("no Landlock"), std::string::npos) << r.output;
  } else {
    EXPECT_EQ(r.exit_code, 0) << r.output;
  }
}

TEST(SandboxExec, UsageErrorsExitTwo) {
  Dirs d;
  const std::string ok = d.ok.string();
  const std::vector<std::vector<std::string>> bad = {
      {},                         // nothing
      {"--write", ok, "true"},    // no --
      {"--write", ok, "--"},      // no program
      {"--write"},                // --write without a directory
      {"--bogus", "--", "true"},  // unknown flag
  };
  for (const auto& args : bad) {
    ProcessResult r = sandbox_exec(args);
    EXPECT_EQ(r.exit_code, 2) << r.output;
    EXPECT_NE(r.output.find("usage: kagent-sandbox-exec"), std::string::npos) << r.output;
  }
  const std::string missing = (d.tmp / "missing").string();
  ProcessResult r = sandbox_exec({"--write", missing, "--", "true"});
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find(missing), std::string::npos) << r.output;
}

TEST(SandboxExec, UnrunnableProgramExits127) {
  Dirs d;
  ProcessResult r = sandbox_exec({"--write", d.ok.string(), "--no-netns", "--", "/nonexistent/kagent-program"});
  EXPECT_EQ(r.exit_code, 127) << r.output;
  EXPECT_NE(r.output.find("/nonexistent/kagent-program"), std::string::npos) << r.output;
}

}  // namespace
}  // namespace kagent
