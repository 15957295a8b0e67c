// The sandboxed shell: it runs commands in the workspace, reports their status, cuts long output,
// kills at the time limit, and keeps the model off the network, off the host's files and away
// from kagent's secrets. Skipped (with the probe's reason) where no sandbox works.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/ipc.h>
#include <sys/shm.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>

#include <gtest/gtest.h>

#include "kagent/model_tools/shell_tool.hpp"
#include "kagent/sandbox/process.hpp"

namespace fs = std::filesystem;
using nlohmann::json;
using namespace kagent::model_tools;

namespace {

std::string unique_name(const std::string& base) {
  return base + "-" + std::to_string(getpid()) + "-" + ::testing::UnitTest::GetInstance()->current_test_info()->name();
}

class ShellToolTest : public ::testing::Test {
 protected:
  void SetUp() override {
    sandbox_ = probe_shell_sandbox();
    if (!sandbox_.available) GTEST_SKIP() << "no shell sandbox here: " << sandbox_.reason;
    make_workspace(fs::path(::testing::TempDir()));
  }
  void TearDown() override { remove_base(); }

  void remove_base() {
    std::error_code ec;
    if (!base_.empty()) fs::remove_all(base_, ec);
  }

  // base_/ws; base_ (in `parent`) holds what a test writes beside the workspace.
  void make_workspace(const fs::path& parent) {
    remove_base();
    base_ = parent / unique_name("kagent-shell");
    fs::create_directories(base_ / "ws");
    ws_ = std::make_unique<Workspace>(base_ / "ws");
    tool_ = make_shell_tool(*ws_, sandbox_, options_);
    ASSERT_NE(tool_, nullptr);
  }

  ToolResult run(const std::string& command, int timeout_s = 10) {
    return tool_->run(json{{"command", command}, {"timeout_s", timeout_s}});
  }

  ShellSandbox sandbox_;
  ShellOptions options_;
  fs::path base_;
  std::unique_ptr<Workspace> ws_;
  std::unique_ptr<Tool> tool_;
};

TEST_F(ShellToolTest, RunsInTheWorkspaceAndSeesItsFiles) {
  std::ofstream(ws_->root() / "hello.txt") << "hello from the host\n";
  ToolResult r = run("cat hello.txt; pwd; echo to-stderr >&2");
  EXPECT_FALSE(r.is_error) << r.text;
  EXPECT_EQ(r.text.rfind("exit 0\n", 0), 0u) << r.text;
  EXPECT_NE(r.text.find("hello from the host"), std::string::npos) << r.text;
  EXPECT_NE(r.text.find(ws_->root().string()), std::string::npos) << r.text;
  EXPECT_NE(r.text.find("to-stderr"), std::string::npos) << r.text;  // merged
  EXPECT_EQ(r.record["sandbox"], sandbox_.method);
}

TEST_F(ShellToolTest, ReportsExitStatusAndSignals) {
  ToolResult r = run("echo failing; exit 2");
  EXPECT_FALSE(r.is_error);  // the model reads the status
  EXPECT_EQ(r.text.rfind("exit 2\nfailing", 0), 0u) << r.text;
  EXPECT_EQ(r.record["exit_code"], 2);

  if (sandbox_.method == "namespaces") {  // bwrap reports a signal as exit 128+n
    r = run("kill -9 $$");
    EXPECT_EQ(r.text.rfind("killed by signal 9", 0), 0u) << r.text;
  }
  r = run("true");
  EXPECT_EQ(r.text, "exit 0 (no output)");
}

TEST_F(ShellToolTest, WritesInsideTheWorkspaceOnly) {
  // Outside: the project tree (beside the test binary), the workspace's parent, the root.
  fs::path beside_binary = fs::path(kagent::self_dir()) / unique_name(".shell_escape_test");
  fs::path beside_ws = base_ / "outside";
  std::string cmd =
      "touch '" + beside_binary.string() + "' && echo ESCAPED1; echo x > $HOME/../outside && echo ESCAPED2;" +
      " echo x > /kagent_shell_escape_test && echo ESCAPED3; mkdir -p sub && echo inside > sub/f && cat sub/f";
  ToolResult r = run(cmd);
  EXPECT_FALSE(fs::exists(beside_binary)) << r.text;
  EXPECT_FALSE(fs::exists(beside_ws)) << r.text;
  EXPECT_FALSE(fs::exists("/kagent_shell_escape_test")) << r.text;
  std::error_code ec;
  fs::remove(beside_binary, ec);
  fs::remove("/kagent_shell_escape_test", ec);
  EXPECT_EQ(r.text.find("ESCAPED1"), std::string::npos) << r.text;
  EXPECT_EQ(r.text.find("ESCAPED3"), std::string::npos) << r.text;
  // Inside works, and shows on the host.
  EXPECT_NE(r.text.find("inside"), std::string::npos) << r.text;
  EXPECT_TRUE(fs::exists(ws_->root() / "sub" / "f"));
  // TMPDIR is in the workspace and writable.
  r = run("echo t > \"$TMPDIR/t\" && cat \"$TMPDIR/t\"");
  EXPECT_EQ(r.text, "exit 0\nt\n");
}

TEST_F(ShellToolTest, WorkspaceOutsideTmpIsTheOnlyWritablePlace) {
  // A workspace on the project's file system (not under a tmpfs the sandbox replaces): its
  // parent directory must be read-only inside.
  make_workspace(fs::path(kagent::self_dir()));
  ToolResult r = run("echo x > ../outside; echo ok > inside && cat inside");
  EXPECT_FALSE(fs::exists(base_ / "outside")) << r.text;
  EXPECT_NE(r.text.find("ok"), std::string::npos) << r.text;
  // Under /tmp, /run or /dev/shm (a build tree there) the sandbox's private tmpfs takes the write
  // and drops it: nothing reaches the host (checked above), but no error shows either.
  const std::string base = base_.string();
  const bool on_private_tmpfs =
      base.rfind("/tmp/", 0) == 0 || base.rfind("/run/", 0) == 0 || base.rfind("/dev/shm/", 0) == 0;
  if (!on_private_tmpfs) {
    EXPECT_NE(r.text.find("Read-only file system"), std::string::npos) << r.text;
  }
}

TEST_F(ShellToolTest, HasNoNetwork) {
  int listener = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ASSERT_GE(listener, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  ASSERT_EQ(listen(listener, 4), 0);
  socklen_t len = sizeof addr;
  ASSERT_EQ(getsockname(listener, reinterpret_cast<sockaddr*>(&addr), &len), 0);
  int port = ntohs(addr.sin_port);

  ToolResult r = run("exec 3<>/dev/tcp/127.0.0.1/" + std::to_string(port) + " && echo CONNECTED");
  EXPECT_EQ(r.text.find("CONNECTED"), std::string::npos) << r.text;
  EXPECT_NE(r.record["exit_code"], 0) << r.text;
  // Nothing reached the listener either.
  fcntl(listener, F_SETFL, O_NONBLOCK);
  EXPECT_LT(accept(listener, nullptr, nullptr), 0);
  close(listener);
}

// True while a process on the host has `needle` in its command line.
bool process_running(const std::string& needle) {
  for (const auto& e : fs::directory_iterator("/proc")) {
    // A process that exits while its cmdline is read fails the read (ESRCH, thrown by the stream
    // buffer): it is not running.
    try {
      std::ifstream in(e.path() / "cmdline");
      std::string cmdline((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      if (cmdline.find(needle) != std::string::npos) return true;
    } catch (const std::exception&) {
    }
  }
  return false;
}

bool gone_within(const std::string& needle, std::chrono::milliseconds wait) {
  auto until = std::chrono::steady_clock::now() + wait;
  while (process_running(needle)) {
    if (std::chrono::steady_clock::now() > until) return false;
    usleep(20000);
  }
  return true;
}

TEST_F(ShellToolTest, TimeoutKillsTheCommandAndItsChildren) {
  auto start = std::chrono::steady_clock::now();
  ToolResult r = run("echo started; sleep 100.417 & sleep 100.418", 1);
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(r.text.rfind("killed after 1 s (timeout)\nstarted", 0), 0u) << r.text;
  EXPECT_FALSE(r.is_error);
  EXPECT_EQ(r.record["timed_out"], true);
  EXPECT_LT(seconds, 2.5);
  EXPECT_TRUE(gone_within("100.417", std::chrono::milliseconds(1000)));
  EXPECT_TRUE(gone_within("100.418", std::chrono::milliseconds(1000)));
}

TEST_F(ShellToolTest, BackgroundProcessesEndWithTheCommand) {
  auto start = std::chrono::steady_clock::now();
  ToolResult r = run("sleep 100.419 & echo done");
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(r.text, "exit 0\ndone\n");
  EXPECT_LT(seconds, 2.0);
  EXPECT_TRUE(gone_within("100.419", std::chrono::milliseconds(1000)));
}

TEST_F(ShellToolTest, CutsLongOutputInTheMiddle) {
  options_.output_cap = 1000;
  tool_ = make_shell_tool(*ws_, sandbox_, options_);
  ToolResult r = run("seq 1 20000");
  EXPECT_NE(r.text.find("left out"), std::string::npos) << r.text;
  EXPECT_LT(r.text.size(), 1100u);
  EXPECT_NE(r.text.find("\n1\n2\n"), std::string::npos);   // head
  EXPECT_NE(r.text.find("\n20000\n"), std::string::npos);  // tail
  EXPECT_EQ(r.record["output_bytes"], 108894);

  // Far more than is kept: the middle is dropped while it streams in.
  r = run("yes | head -c 50000000; echo; echo END");
  EXPECT_NE(r.text.find("50000005 bytes of output in all"), std::string::npos) << r.text.substr(0, 200);
  EXPECT_NE(r.text.find("END"), std::string::npos);
  EXPECT_LT(r.text.size(), 1200u);
}

TEST_F(ShellToolTest, DoesNotSeeKagentsSecrets) {
  setenv("KAGENT_TEST_API_KEY", "sk-shell-test-secret", 1);
  setenv("OPENAI_API_KEY", "sk-shell-test-secret", 1);
  ToolResult r = run("env; echo HOME=$HOME");
  unsetenv("KAGENT_TEST_API_KEY");
  unsetenv("OPENAI_API_KEY");
  EXPECT_EQ(r.text.find("sk-shell-test-secret"), std::string::npos) << r.text;
  EXPECT_NE(r.text.find("HOME=" + ws_->root().string()), std::string::npos) << r.text;
  EXPECT_NE(r.text.find("LANG=C.UTF-8"), std::string::npos) << r.text;
}

TEST_F(ShellToolTest, HasAUsableDevAndNoDisks) {
  ToolResult r = run("echo x > /dev/null && head -c 4 /dev/urandom | wc -c && ls /dev");
  EXPECT_EQ(r.text.rfind("exit 0\n4\n", 0), 0u) << r.text;
  EXPECT_EQ(r.text.find("vda"), std::string::npos) << r.text;
  EXPECT_EQ(r.text.find("sda"), std::string::npos) << r.text;
}

TEST_F(ShellToolTest, RejectsBadArguments) {
  EXPECT_THROW(tool_->run(json{{"command", "true"}, {"timeout_s", 0}}), ToolError);
  EXPECT_THROW(tool_->run(json{{"command", "true"}, {"timeout_s", options_.max_timeout.count() + 1}}), ToolError);
  EXPECT_THROW(tool_->run(json{{"command", "true"}, {"timeout_s", "10"}}), ToolError);
  EXPECT_THROW(tool_->run(json::object()), ToolError);
  EXPECT_THROW(tool_->run(json{{"command", 5}}), ToolError);
}

// The shell's view of the host: system directories, the toolkit, the workspace; no home
// directories, no /root, no host /tmp, no /run and its sockets, no kagent process in /proc.
TEST_F(ShellToolTest, SeesNoHomeRootHostTmpOrRun) {
  if (sandbox_.method != "namespaces") GTEST_SKIP() << "the view is checked for the namespaces sandbox";
  // A file in the host's /tmp (outside the workspace), and one in /root when we may write there.
  const fs::path host_tmp = fs::temp_directory_path() / unique_name("kagent-host-secret");
  std::ofstream(host_tmp) << "host-tmp-secret\n";
  ToolResult r = run("cat " + host_tmp.string() +
                     " 2>&1; ls -d /root /home /run/* /var/lib 2>&1; "
                     "test -e /root/.bashrc && echo ROOT-BASHRC-VISIBLE; test -e /etc/shadow && echo SHADOW-VISIBLE; "
                     "grep -l MYKEY /proc/[0-9]*/environ 2>/dev/null; echo done");
  std::error_code ec;
  fs::remove(host_tmp, ec);
  EXPECT_FALSE(r.is_error) << r.text;
  EXPECT_EQ(r.text.find("host-tmp-secret"), std::string::npos) << r.text;
  EXPECT_EQ(r.text.find("ROOT-BASHRC-VISIBLE"), std::string::npos) << r.text;
  EXPECT_EQ(r.text.find("SHADOW-VISIBLE"), std::string::npos) << r.text;
  EXPECT_NE(r.text.find("cannot access '/root'"), std::string::npos) << r.text;
  EXPECT_NE(r.text.find("cannot access '/home'"), std::string::npos) << r.text;
  EXPECT_NE(r.text.find("cannot access '/var/lib'"), std::string::npos) << r.text;
  EXPECT_NE(r.text.find("cannot access '/run/*'"), std::string::npos) << r.text;
  EXPECT_NE(r.text.find("done"), std::string::npos) << r.text;
  // What a job needs is there: system binaries, python3 if the host has it, the toolkit.
  r = run("ls /usr/bin/env >/dev/null && echo has-usr; command -v bash");
  EXPECT_NE(r.text.find("has-usr"), std::string::npos) << r.text;
}

// RLIMIT_NPROC does not bind root; the pid namespace's pid_max does, for everyone.
TEST_F(ShellToolTest, AForkBombIsContained) {
  if (sandbox_.process_limit.rfind("pid namespace", 0) != 0)
    GTEST_SKIP() << "no per-namespace process limit here: " << sandbox_.process_limit;
  if (kagent::find_in_path("python3").empty()) GTEST_SKIP() << "python3 not found";
  // 3000 sleepers asked for; at most the limit can exist at once. python3 reports the failed fork
  // instead of retrying for seconds as bash's does.
  ToolResult r =
      run("python3 -c \"import os, time\n"
          "n = 0\n"
          "try:\n"
          "    for i in range(3000):\n"
          "        if os.fork() == 0:\n"
          "            time.sleep(20); os._exit(0)\n"
          "        n += 1\n"
          "except OSError:\n"
          "    pass\n"
          "print('live', len([p for p in os.listdir('/proc') if p.isdigit()]))\"",
          60);
  EXPECT_FALSE(r.is_error) << r.text;
  size_t at = r.text.find("live ");
  ASSERT_NE(at, std::string::npos) << r.text;
  int live = std::atoi(r.text.c_str() + at + 5);
  EXPECT_GT(live, 100) << r.text;
  EXPECT_LE(live, 1024) << r.text;
  // And the classic bomb: its processes end with the command (the pid namespace goes with its
  // first process) by the time limit at the latest, and the next command runs normally.
  r = run(":(){ :|:& };:; sleep 2", 5);
  EXPECT_FALSE(r.is_error) << r.text;
  EXPECT_LT(r.record["seconds"].get<double>(), 8.0) << r.text;
  r = run("echo after");
  EXPECT_NE(r.text.find("after"), std::string::npos) << r.text;
}

// The shell has its own IPC namespace: a host SysV segment is invisible (it could be read,
// overwritten and removed before).
TEST_F(ShellToolTest, SeesNoHostSharedMemory) {
  if (sandbox_.method != "namespaces") GTEST_SKIP() << "checked for the namespaces sandbox";
  const key_t key = static_cast<key_t>(0x4b410000 | (getpid() & 0xffff));
  int id = shmget(key, 4096, IPC_CREAT | IPC_EXCL | 0600);
  if (id < 0) GTEST_SKIP() << "shmget: " << std::strerror(errno);
  ToolResult r = run("cat /proc/sysvipc/shm; ipcs -m 2>/dev/null; echo done");
  shmctl(id, IPC_RMID, nullptr);
  EXPECT_NE(r.text.find("done"), std::string::npos) << r.text;
  char hex[16];
  std::snprintf(hex, sizeof hex, "0x%08x", static_cast<unsigned>(key));
  EXPECT_EQ(r.text.find(hex), std::string::npos) << r.text;                              // ipcs
  EXPECT_EQ(r.text.find(" " + std::to_string(key) + " "), std::string::npos) << r.text;  // /proc/sysvipc/shm
}

// pid 1 inside is the jail's init, never a copy of kagent: no trace of kagent's command line or
// environment in /proc/1.
TEST_F(ShellToolTest, PidOneRevealsNothingOfKagent) {
  if (sandbox_.method != "namespaces") GTEST_SKIP() << "checked for the namespaces sandbox";
  std::ifstream self("/proc/self/cmdline");
  std::string argv0;
  std::getline(self, argv0, '\0');
  ASSERT_FALSE(argv0.empty());
  setenv("KAGENT_TEST_PID1_SECRET", "sk-pid1-secret", 1);
  ToolResult r =
      run("tr '\\0' ' ' < /proc/1/cmdline; echo; tr '\\0' '\\n' < /proc/1/environ; readlink /proc/1/exe; "
          "grep -c . /proc/1/maps");
  unsetenv("KAGENT_TEST_PID1_SECRET");
  EXPECT_EQ(r.text.rfind("exit 0\njail-init ", 0), 0u) << r.text;
  EXPECT_EQ(r.text.find(argv0), std::string::npos) << r.text;
  EXPECT_EQ(r.text.find(fs::path(argv0).filename().string()), std::string::npos) << r.text;
  EXPECT_EQ(r.text.find("sk-pid1-secret"), std::string::npos) << r.text;
  EXPECT_NE(r.text.find("/memfd:jail-init"), std::string::npos) << r.text;
}

// The view and PATH hold no home directory, even when kagent's PATH has entries there.
TEST_F(ShellToolTest, PathHasNoHomeDirectories) {
  const std::string old = std::getenv("PATH") != nullptr ? std::getenv("PATH") : "";
  setenv("PATH", ("/root/.pyenv/shims:/home/someone/bin:" + old).c_str(), 1);
  ToolResult r = run("echo \"PATH=$PATH\"; ls -d /root /home 2>&1; echo done");
  setenv("PATH", old.c_str(), 1);
  size_t at = r.text.find("PATH=");
  ASSERT_NE(at, std::string::npos) << r.text;
  std::string path = r.text.substr(at, r.text.find('\n', at) - at);
  EXPECT_EQ(path.find("/root"), std::string::npos) << path;
  EXPECT_EQ(path.find("/home"), std::string::npos) << path;
  if (sandbox_.method == "namespaces") {
    EXPECT_NE(r.text.find("cannot access '/root'"), std::string::npos) << r.text;
    EXPECT_NE(r.text.find("cannot access '/home'"), std::string::npos) << r.text;
  }
}

// No new file systems: no capabilities, and no nested user namespace to get them back in (where a
// tmpfs of any size could be mounted).
TEST_F(ShellToolTest, CannotMountFileSystems) {
  if (sandbox_.method != "namespaces") GTEST_SKIP() << "checked for the namespaces sandbox";
  ToolResult r =
      run("grep CapEff /proc/self/status; mkdir -p /tmp/x; mount -t tmpfs none /tmp/x 2>/dev/null && echo MOUNTED; "
          "if command -v unshare >/dev/null; then unshare -Urm sh -c 'mount -t tmpfs none /tmp/x && echo NESTED' "
          "2>/dev/null; unshare -U true 2>/dev/null && echo USERNS; fi; echo done");
  EXPECT_NE(r.text.find("CapEff:\t0000000000000000"), std::string::npos) << r.text;
  EXPECT_EQ(r.text.find("MOUNTED"), std::string::npos) << r.text;
  EXPECT_EQ(r.text.find("NESTED"), std::string::npos) << r.text;
  EXPECT_EQ(r.text.find("USERNS"), std::string::npos) << r.text;
  EXPECT_NE(r.text.find("done"), std::string::npos) << r.text;
}

// Ceilings, set small here: each command that hits one is told which.
class ShellLimitsTest : public ShellToolTest {
 protected:
  void SetUp() override {
    options_.memory_bytes = 64 << 20;
    options_.file_bytes = 3 << 20;
    options_.tmp_bytes = 1 << 20;
    options_.shm_bytes = 1 << 20;
    options_.workspace_bytes = 2 << 20;
    ShellToolTest::SetUp();
  }
};

TEST_F(ShellLimitsTest, MemoryCeiling) {
  if (sandbox_.method != "namespaces") GTEST_SKIP() << "checked for the namespaces sandbox";
  // 200 MB in one bash variable, past the 64 MiB ceiling.
  ToolResult r = run("x=$(head -c 200000000 /dev/zero | tr '\\0' a); echo ${#x}", 30);
  const std::string how = r.record["memory_limit"];
  EXPECT_TRUE(how.rfind("cgroup memory.max 64 MiB", 0) == 0 || how.rfind("RLIMIT_DATA 64 MiB", 0) == 0) << how;
  EXPECT_EQ(r.text.find("200000000"), std::string::npos) << r.text;
  EXPECT_NE(r.text.find("out of memory (the shell's limit is 64 MiB"), std::string::npos) << r.text;
}

TEST_F(ShellLimitsTest, TmpfsAndFileAndWorkspaceCeilings) {
  if (sandbox_.method != "namespaces") GTEST_SKIP() << "checked for the namespaces sandbox";
  ToolResult r = run("head -c 2000000 /dev/zero > /dev/shm/f; head -c 2000000 /dev/zero > /tmp/f");
  EXPECT_NE(r.text.find("No space left on device"), std::string::npos) << r.text;
  EXPECT_NE(r.text.find("[no space left: /tmp and /var/tmp hold 1 MiB each, /dev/shm 1 MiB"), std::string::npos)
      << r.text;
  r = run("head -c 4000000 /dev/zero > big");
  EXPECT_NE(r.text.find("file size limit, 3 MiB per file"), std::string::npos) << r.text;
  EXPECT_LE(fs::file_size(ws_->root() / "big"), 3u << 20);
  fs::remove(ws_->root() / "big");
  // Three files under the file size limit, past the workspace's 2 MiB.
  r = run("for i in 1 2 3; do head -c 1000000 /dev/urandom > part$i; done; echo written");
  EXPECT_EQ(r.text.rfind("exit 0\n", 0), 0u) << r.text;
  EXPECT_NE(r.text.find("the workspace holds"), std::string::npos) << r.text;
  EXPECT_NE(r.text.find("past its limit of 2 MiB"), std::string::npos) << r.text;
  EXPECT_GT(r.record["workspace_bytes"].get<std::uint64_t>(), 2u << 20);
}

TEST(ShellToolSpec, DescribesTheLimitsAndIsOfferedOnlyWithASandbox) {
  Workspace ws(fs::path(::testing::TempDir()) / unique_name("kagent-shell-spec"));
  ShellSandbox none;
  none.reason = "testing";
  EXPECT_EQ(make_shell_tool(ws, none), nullptr);

  ShellSandbox some{true, "namespaces", "", ""};
  ShellOptions options;
  options.default_timeout = std::chrono::seconds(30);
  options.max_timeout = std::chrono::seconds(300);
  options.output_cap = 5000;
  auto tool = make_shell_tool(ws, some, options);
  ASSERT_NE(tool, nullptr);
  auto spec = tool->spec();
  EXPECT_EQ(spec.name, "shell");
  EXPECT_NE(spec.description.find("no network"), std::string::npos);
  EXPECT_NE(spec.description.find("only the workspace is writable"), std::string::npos);
  EXPECT_NE(spec.description.find("default 30, at most 300"), std::string::npos);
  EXPECT_NE(spec.description.find("5000 bytes"), std::string::npos);
  EXPECT_EQ(spec.parameters["required"], json::array({"command"}));
  EXPECT_EQ(spec.parameters["properties"]["timeout_s"]["maximum"], 300);
  std::error_code ec;
  fs::remove_all(ws.root(), ec);
}

}  // namespace

// The run's time budget bounds a command (issue 16: `--minutes 0.05` ran 32 s): the deadline the
// agent loop sets cuts the command's own timeout down to what is left.
TEST_F(ShellToolTest, TheDeadlineCapsTheTimeout) {
  tool_->set_deadline(std::chrono::steady_clock::now() + std::chrono::milliseconds(1500));
  const auto t0 = std::chrono::steady_clock::now();
  ToolResult r = run("sleep 30", 60);
  const auto took = std::chrono::steady_clock::now() - t0;
  EXPECT_NE(r.text.find("killed after 2 s (timeout)"), std::string::npos) << r.text;
  EXPECT_LT(took, std::chrono::seconds(15));
  // A call started with (almost) no time left still gets a second, and answers.
  tool_->set_deadline(std::chrono::steady_clock::now());
  EXPECT_NE(run("sleep 30", 60).text.find("killed after 1 s (timeout)"), std::string::npos);
  tool_->set_deadline(std::nullopt);
  EXPECT_EQ(run("true").text.rfind("exit 0", 0), 0u);
}
