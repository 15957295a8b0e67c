// What each long-lived child of kagent sees, read from outside through /proc as docs/sandbox.md's table
// states it: capabilities, no_new_privs, namespaces, environment,
// and for the jailed Python children their file system (through /proc/PID/root). The children are
// started exactly as kagent starts them; the Python ones need no torch to say hello.
#include <gtest/gtest.h>
#include <unistd.h>

#include <sys/wait.h>

#include <chrono>
#include <csignal>
#include <cstdlib>
#include <fstream>
#include <future>
#include <map>
#include <sstream>
#include <thread>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "kagent/compile/compile_worker_client.hpp"
#include "kagent/gpu/memory_users.hpp"
#include "kagent/model_tools/shell_tool.hpp"
#include "kagent/model_tools/workspace.hpp"
#include "kagent/protocol/child_client.hpp"
#include "kagent/reference/python_child.hpp"
#include "kagent/reference/ref_server.hpp"
#include "kagent/sandbox/policy.hpp"
#include "kagent/sandbox/process.hpp"
#include "kagent/sandbox/spawn.hpp"
#include "test_util.hpp"

namespace kagent {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

constexpr const char* kKey = "sk-child-view-secret-42";

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string status_field(pid_t pid, const std::string& field) {
  std::istringstream in(slurp(fmt::format("/proc/{}/status", pid)));
  std::string line;
  while (std::getline(in, line))
    if (line.rfind(field + ":", 0) == 0) {
      std::string v = line.substr(field.size() + 1);
      v.erase(0, v.find_first_not_of(" \t"));
      return v;
    }
  return "";
}

std::string ns(pid_t pid, const char* kind) {
  std::error_code ec;
  return fs::read_symlink(fmt::format("/proc/{}/ns/{}", pid, kind), ec).string();
}

// The program behind a jail's init (its one child), or `pid` itself when there is no init.
pid_t program_of(pid_t pid) {
  for (int i = 0; i < 100; ++i) {
    std::string children = slurp(fmt::format("/proc/{}/task/{}/children", pid, pid));
    std::string comm = slurp(fmt::format("/proc/{}/comm", pid));
    if (comm.rfind("python", 0) == 0 || comm.rfind("kagent-runner", 0) == 0) return pid;
    if (!children.empty()) return static_cast<pid_t>(std::stol(children));
    std::this_thread::sleep_for(20ms);
  }
  return pid;
}

class ChildView : public ::testing::Test {
 protected:
  void SetUp() override {
    setenv("OPENAI_API_KEY", kKey, 1);
    setenv("KAGENT_CACHE_DIR", (dir.path() / "cache").c_str(), 1);
    secret = dir.path() / "host-secret.txt";
    std::ofstream(secret) << "secret";
    problem = dir.path() / "problem.py";
    std::ofstream(problem) << "raise SystemExit('never imported here')\n";
  }
  void TearDown() override {
    unsetenv("OPENAI_API_KEY");
    unsetenv("KAGENT_CACHE_DIR");
  }
  void expect_no_key(pid_t pid) {
    const std::string env = slurp(fmt::format("/proc/{}/environ", pid));
    EXPECT_FALSE(env.empty());
    EXPECT_EQ(env.find(kKey), std::string::npos);
    EXPECT_EQ(env.find("OPENAI_API_KEY"), std::string::npos);
  }
  // A Python child in its jail: every namespace its own, no capabilities, only its files.
  void expect_jailed(pid_t init, const std::vector<fs::path>& visible) {
    const pid_t pid = program_of(init);
    ASSERT_NE(pid, init) << "no jail init between kagent and the program";
    EXPECT_EQ(status_field(pid, "NoNewPrivs"), "1");
    EXPECT_EQ(status_field(pid, "CapEff"), "0000000000000000");
    EXPECT_EQ(status_field(pid, "CapPrm"), "0000000000000000");
    EXPECT_EQ(status_field(pid, "CapBnd"), "0000000000000000");
    for (const char* kind : {"user", "mnt", "net", "ipc", "pid"})
      EXPECT_NE(ns(pid, kind), ns(getpid(), kind)) << kind << " namespace shared with kagent";
    expect_no_key(pid);
    const fs::path root = fmt::format("/proc/{}/root", pid);
    std::error_code ec;
    EXPECT_FALSE(fs::exists(root / secret.relative_path(), ec)) << "a host file beside the problem is visible";
    EXPECT_FALSE(fs::exists(root / fmt::format("proc/{}", getpid()), ec)) << "kagent's /proc entry is visible";
    // Its own /proc is there (CUDA's driver reads /proc/<its pid>/...: an empty /proc fails cuInit).
    EXPECT_TRUE(fs::exists(root / "proc/1/status", ec)) << "no /proc of its own";
    EXPECT_TRUE(fs::exists(root / "proc/driver", ec)) << "no /proc/driver (the GPU driver's files)";
    // Its own /proc files take writes (cuInit needs that); what would reach the machine does not.
    std::map<std::string, std::string> options;
    std::istringstream mounts(slurp(fmt::format("/proc/{}/mountinfo", pid)));
    for (std::string line; std::getline(mounts, line);) {
      std::istringstream f(line);
      std::string id, parent, dev, mroot, point, opts;
      f >> id >> parent >> dev >> mroot >> point >> opts;
      options[point] = opts;
    }
    EXPECT_EQ(options["/proc"].rfind("rw", 0), 0u) << options["/proc"];
    for (const char* p : {"/proc/sys", "/proc/sysrq-trigger", "/proc/irq", "/proc/bus"}) {
      if (options.count(p)) {
        EXPECT_EQ(options[p].rfind("ro", 0), 0u) << p << " " << options[p];
      }
    }
    EXPECT_EQ(options["/proc/sys"].rfind("ro", 0), 0u) << "/proc/sys is not bound read-only";
    EXPECT_FALSE(fs::exists(root / "root/.bashrc", ec));
    EXPECT_FALSE(fs::exists(root / "home", ec));
    for (const auto& v : visible) EXPECT_TRUE(fs::exists(root / v.relative_path(), ec)) << v;
    // Its /cmdline as pid 1 inside: nothing of kagent's.
    EXPECT_EQ(slurp(fmt::format("/proc/{}/cmdline", init)).find("kagent_unit_tests"), std::string::npos);
  }

  test::TempDir dir;
  fs::path secret, problem;
};

TEST_F(ChildView, TheReferenceServerIsJailed) {
  if (find_in_path("python3").empty()) GTEST_SKIP() << "no python3";
  const fs::path cache = RefServer::cache_dir_for(problem);
  fs::create_directories(cache);
  ChildOptions o;
  o.runner_path = "python3";
  o.args = {"-m", "kagent_ref"};
  o.hello_name = "kagent-ref";
  o.policy = sandbox::reference_server_policy();
  o.env = {"PYTHONPATH=" + RefServer::tools_dir()};
  o.launch =
      python_child_launcher({"reference server", {RefServer::tools_dir(), problem.string()}, {cache.string()}, ""});
  ChildClient c(o);
  ChildReply r = c.request({{"cmd", "ping"}}, 60s);
  ASSERT_TRUE(r.ok()) << r.message;
  EXPECT_TRUE(c.sandbox_warning().empty()) << c.sandbox_warning();
  expect_jailed(c.pid(), {problem, fs::path(RefServer::tools_dir()) / "kagent_ref" / "server.py", cache});
}

TEST_F(ChildView, TheModelNewWorkerIsJailed) {
  if (find_in_path("python3").empty()) GTEST_SKIP() << "no python3";
  const fs::path build = dir.path() / "build";
  fs::create_directories(build);
  const fs::path solution = dir.path() / "solution.py";
  std::ofstream(solution) << "class ModelNew: pass\n";
  ChildOptions o;
  o.runner_path = "python3";
  o.args = {"-m", "kagent_modelnew.worker"};
  o.hello_name = "kagent-modelnew";
  o.policy = sandbox::modelnew_worker_policy();
  o.env = {"PYTHONPATH=" + RefServer::tools_dir()};
  o.launch = python_child_launcher(
      {"ModelNew worker", {RefServer::tools_dir(), problem.string(), solution.string()}, {build.string()}, ""});
  ChildClient c(o);
  ChildReply r = c.request({{"cmd", "ping"}}, 60s);
  ASSERT_TRUE(r.ok()) << r.message;
  EXPECT_TRUE(c.sandbox_warning().empty()) << c.sandbox_warning();
  expect_jailed(c.pid(), {problem, solution, build});
}

TEST_F(ChildView, TheRunnerHasNoKeyNoPrivilegesAndItsOwnNetwork) {
  const fs::path runner = test::binary_dir() / "kagent-runner";
  if (!fs::exists(runner)) GTEST_SKIP() << "no kagent-runner in this build";
  ChildOptions o;
  o.runner_path = runner.string();
  ChildClient c(o);
  ChildReply r = c.request({{"cmd", "ping"}}, 60s);
  ASSERT_TRUE(r.ok()) << r.message;
  const pid_t pid = c.pid();
  EXPECT_EQ(status_field(pid, "NoNewPrivs"), "1");
  expect_no_key(pid);
  if (c.sandbox_warning().empty()) {
    EXPECT_NE(ns(pid, "net"), ns(getpid(), "net"));
  }
}

// NVRTC's worker enters its namespaces and view once it has the request: a source that takes long
// to compile (a macro that expands without bound) holds it there while it is read from outside.
TEST_F(ChildView, TheCompileWorkerSeesOnlyTheToolkit) {
  const std::string exe = compile_worker_path();
  if (exe.empty()) GTEST_SKIP() << "no kagent-compile in this build";
  std::string bomb = "#define A0 x\n";
  for (int i = 1; i <= 40; ++i) bomb += fmt::format("#define A{} A{} A{}\n", i, i - 1, i - 1);
  bomb += "A40\n";
  int in[2], out[2];
  ASSERT_EQ(pipe(in), 0);
  ASSERT_EQ(pipe(out), 0);
  const std::vector<std::string> visible = {std::string(KAGENT_CUDA_INCLUDE_DIR)};
  std::vector<std::string> argv = {exe};
  for (const auto& v : visible) argv.insert(argv.end(), {"--visible", v});
  const rlim_t memory = sandbox::kAddressSanitizerBuild ? 0 : rlim_t{4} << 30;
  pid_t pid = sandbox::spawn(sandbox::compile_worker_policy(visible, memory, 30), {argv, {}, in[0], out[1], -1});
  close(in[0]);
  close(out[1]);
  const std::string req =
      nlohmann::json({{"name", "bomb.cu"}, {"source", bomb}, {"options", nlohmann::json::array()}}).dump();
  ASSERT_EQ(write(in[1], req.data(), req.size()), static_cast<ssize_t>(req.size()));
  close(in[1]);
  bool entered = false;
  for (int i = 0; i < 500 && !entered; ++i) {
    entered = ns(pid, "mnt") != ns(getpid(), "mnt") && !ns(pid, "mnt").empty();
    if (!entered) std::this_thread::sleep_for(10ms);
  }
  ASSERT_TRUE(entered) << "the worker never entered its mount namespace";
  const fs::path root = fmt::format("/proc/{}/root", pid);
  std::error_code ec;
  bool viewed = false;  // pivot_root into the view comes just after the namespaces
  for (int i = 0; i < 500 && !viewed; ++i) {
    viewed = !fs::exists(root / "usr/bin", ec);
    if (!viewed) std::this_thread::sleep_for(10ms);
  }
  ASSERT_TRUE(viewed) << "the worker never entered its view";
  EXPECT_EQ(status_field(pid, "NoNewPrivs"), "1");
  for (const char* kind : {"mnt", "net"}) EXPECT_NE(ns(pid, kind), ns(getpid(), kind)) << kind;
  expect_no_key(pid);
  EXPECT_FALSE(fs::exists(root / secret.relative_path(), ec));
  EXPECT_FALSE(fs::exists(root / "proc/self", ec)) << "a /proc in the compile worker's view";
  EXPECT_TRUE(fs::exists(root / fs::path(KAGENT_CUDA_INCLUDE_DIR).relative_path() / "cuda.h", ec));
  kill(pid, SIGKILL);
  waitpid(pid, nullptr, 0);
  close(out[0]);
}

// The model's shell, read from outside while a command runs in it.
TEST_F(ChildView, TheShellIsJailed) {
  model_tools::ShellSandbox sb = model_tools::probe_shell_sandbox();
  if (!sb.available || sb.method != "namespaces") GTEST_SKIP() << "no namespaced shell here: " << sb.reason;
  model_tools::Workspace ws(dir.path() / "ws");
  auto shell = model_tools::make_shell_tool(ws, sb);
  auto done = std::async(std::launch::async, [&] { return shell->run({{"command", "exec sleep 5"}}); });
  pid_t sleeper = 0;
  for (int i = 0; i < 500 && sleeper == 0; ++i) {
    for (const auto& e : fs::directory_iterator("/proc")) {
      const std::string name = e.path().filename().string();
      if (name.find_first_not_of("0123456789") != std::string::npos) continue;
      const pid_t p = std::stoi(name);
      if (slurp(e.path() / "comm").rfind("sleep", 0) == 0 && descends_from(p, {getpid()})) sleeper = p;
    }
    if (sleeper == 0) std::this_thread::sleep_for(10ms);
  }
  ASSERT_NE(sleeper, 0) << "the shell's command was not found";
  EXPECT_EQ(status_field(sleeper, "NoNewPrivs"), "1");
  EXPECT_EQ(status_field(sleeper, "CapEff"), "0000000000000000");
  EXPECT_EQ(status_field(sleeper, "CapBnd"), "0000000000000000");
  for (const char* kind : {"user", "mnt", "net", "ipc", "pid"})
    EXPECT_NE(ns(sleeper, kind), ns(getpid(), kind)) << kind << " namespace shared with kagent";
  expect_no_key(sleeper);
  const fs::path root = fmt::format("/proc/{}/root", sleeper);
  std::error_code ec;
  EXPECT_FALSE(fs::exists(root / secret.relative_path(), ec));
  EXPECT_FALSE(fs::exists(root / fmt::format("proc/{}", getpid()), ec));
  EXPECT_TRUE(fs::exists(root / ws.root().relative_path(), ec));
  kill(sleeper, SIGKILL);
  done.wait();
}

}  // namespace
}  // namespace kagent
