#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "kagent/sandbox/environment.hpp"
#include "kagent/sandbox/network.hpp"
#include "kagent/sandbox/process_setup.hpp"
#include "test_util.hpp"

namespace kagent {
namespace {

using namespace sandbox;

// The runner's environment, as the runner client builds it.
std::vector<std::string> scrubbed_environment(const std::vector<std::string>& extra) {
  EnvPolicy p = runner_environment();
  p.set.insert(p.set.end(), extra.begin(), extra.end());
  return child_environment(p);
}

using test::ScopedEnv;

// Runs `body` in a forked child and returns what it produced: process-wide changes (limits,
// namespaces, uid) must never reach the test process itself.
std::string in_child(const std::function<std::string()>& body) {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) return "pipe failed";
  pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    std::string out = body();
    const char* p = out.data();
    size_t left = out.size();
    while (left > 0) {
      ssize_t n = write(fds[1], p, left);
      if (n <= 0) break;
      p += n;
      left -= static_cast<size_t>(n);
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

bool contains(const std::vector<std::string>& env, const std::string& entry) {
  return std::find(env.begin(), env.end(), entry) != env.end();
}

bool has_name(const std::vector<std::string>& env, const std::string& name) {
  return std::any_of(env.begin(), env.end(), [&](const std::string& e) { return e.starts_with(name + "="); });
}

std::string net_ns() {
  char buf[256];
  ssize_t n = readlink("/proc/self/ns/net", buf, sizeof buf);
  return n > 0 ? std::string(buf, static_cast<size_t>(n)) : std::string("unreadable");
}

// The child's verdict on enter_network_namespace: "entered" (and really in another namespace)
// or the warning text.
std::string namespace_verdict(const std::string& parent_ns) {
  NetnsResult r = enter_network_namespace();
  if (!r.entered) return r.warning.empty() ? std::string("not entered and no warning") : "warning: " + r.warning;
  std::string now = net_ns();
  return now != parent_ns && now != "unreadable" ? std::string("entered") : "entered but still in " + now;
}

TEST(Sandbox, ScrubbedEnvironmentDropsSecretsKeepsCudaVariables) {
  ScopedEnv key("OPENAI_API_KEY", "secret");
  ScopedEnv anthropic("ANTHROPIC_API_KEY", "secret2");
  ScopedEnv foo("FOO", "bar");
  ScopedEnv cvd("CUDA_VISIBLE_DEVICES", "1");
  ScopedEnv ld("LD_LIBRARY_PATH", "/opt/lib");
  ScopedEnv lang("LANG", "de_DE.UTF-8");
  auto env = scrubbed_environment({"KAGENT_GPU=2"});
  EXPECT_FALSE(has_name(env, "OPENAI_API_KEY"));
  EXPECT_FALSE(has_name(env, "ANTHROPIC_API_KEY"));
  EXPECT_FALSE(has_name(env, "FOO"));
  EXPECT_TRUE(contains(env, "CUDA_VISIBLE_DEVICES=1"));
  EXPECT_TRUE(contains(env, "LD_LIBRARY_PATH=/opt/lib"));
  EXPECT_TRUE(contains(env, "KAGENT_GPU=2"));
  EXPECT_TRUE(contains(env, "LANG=C"));
  EXPECT_FALSE(contains(env, "LANG=de_DE.UTF-8"));
  EXPECT_TRUE(has_name(env, "PATH"));
  const std::set<std::string> allowed = {"PATH", "LD_LIBRARY_PATH", "CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER",
                                         "CUDA_MODULE_LOADING", "NVIDIA_VISIBLE_DEVICES", "NVIDIA_DRIVER_CAPABILITIES",
                                         "TMPDIR", "KAGENT_CACHE_DIR", "XDG_CACHE_HOME", "HOME", "SPDLOG_LEVEL",
                                         "KAGENT_RUNNER_NETNS", "LANG", "KAGENT_GPU",
                                         // where the runner finds cuBLASLt and cuDNN (toolkit_library.hpp)
                                         "CUDA_HOME", "KAGENT_LIBRARY_PATH", "VIRTUAL_ENV", "CONDA_PREFIX"};
  auto profiler = [](const std::string& n) {
    return n == "LD_PRELOAD" || n == "CUDA_INJECTION64_PATH" || n.rfind("NV_", 0) == 0 || n.rfind("NSYS_", 0) == 0 ||
           n.rfind("NCU_", 0) == 0 || n.rfind("NVTX_", 0) == 0;
  };
  for (const auto& e : env) {
    std::string name = e.substr(0, e.find('='));
    EXPECT_TRUE(allowed.count(name) == 1 || profiler(name)) << e;
  }
}

TEST(Sandbox, ScrubbedEnvironmentLetsProfilersThrough) {
  // ncu and compute-sanitizer inject through these; without them a profiled kagent shows no kernels.
  ScopedEnv inj("CUDA_INJECTION64_PATH", "/opt/ncu/libinject.so");
  ScopedEnv pre("LD_PRELOAD", "/opt/ncu/libpreload.so");
  ScopedEnv nv("NV_TPS_LAUNCH_TOKEN", "42");
  ScopedEnv nvidia_like("NVX_SECRET", "no");
  auto env = scrubbed_environment({});
  EXPECT_TRUE(contains(env, "CUDA_INJECTION64_PATH=/opt/ncu/libinject.so"));
  EXPECT_TRUE(contains(env, "LD_PRELOAD=/opt/ncu/libpreload.so"));
  EXPECT_TRUE(contains(env, "NV_TPS_LAUNCH_TOKEN=42"));
  EXPECT_FALSE(has_name(env, "NVX_SECRET"));
}

TEST(Sandbox, ScrubbedEnvironmentDefaultsPath) {
  ScopedEnv path("PATH", nullptr);
  auto env = scrubbed_environment({});
  EXPECT_TRUE(contains(env, "PATH=/usr/local/bin:/usr/bin:/bin"));
}

TEST(Sandbox, ScrubbedEnvironmentKeepsPathAndHome) {
  ScopedEnv path("PATH", "/a/bin:/b/bin");
  ScopedEnv home("HOME", "/home/someone");
  auto env = scrubbed_environment({});
  EXPECT_TRUE(contains(env, "PATH=/a/bin:/b/bin"));
  EXPECT_TRUE(contains(env, "HOME=/home/someone"));
}

TEST(Sandbox, ExtrasReplaceKeptVariablesOfTheSameName) {
  ScopedEnv cvd("CUDA_VISIBLE_DEVICES", "1");
  auto env = scrubbed_environment({"CUDA_VISIBLE_DEVICES=3", "KAGENT_GPU=0"});
  EXPECT_EQ(std::count_if(env.begin(), env.end(),
                          [](const std::string& e) { return e.starts_with("CUDA_VISIBLE_DEVICES="); }),
            1);
  EXPECT_TRUE(contains(env, "CUDA_VISIBLE_DEVICES=3"));
  EXPECT_TRUE(contains(env, "KAGENT_GPU=0"));
}

TEST(Sandbox, ChildLimitsApplied) {
  std::string out = in_child([] {
    if (!apply_child_limits()) return std::string("apply_child_limits failed: ") + std::to_string(errno);
    rlimit core{}, fsize{}, nproc{};
    getrlimit(RLIMIT_CORE, &core);
    getrlimit(RLIMIT_FSIZE, &fsize);
    getrlimit(RLIMIT_NPROC, &nproc);
    int sig = 0;
    prctl(PR_GET_PDEATHSIG, &sig);
    std::string s;
    s += getpgid(0) == getpid() ? "leader " : "not-leader ";
    s += prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0) == 1 ? "nnp " : "no-nnp ";
    s += sig == SIGKILL ? "pdeath " : "no-pdeath ";
    s += core.rlim_cur == 0 && core.rlim_max == 0 ? "core0 " : "core? ";
    s += fsize.rlim_cur <= (rlim_t{1} << 30) && fsize.rlim_max <= (rlim_t{1} << 30) ? "fsize " : "fsize? ";
    s += nproc.rlim_cur <= 4096 && nproc.rlim_max <= 4096 ? "nproc" : "nproc?";
    return s;
  });
  EXPECT_EQ(out, "leader nnp pdeath core0 fsize nproc");
}

TEST(Sandbox, ChildLimitsNeverRaiseALimit) {
  std::string out = in_child([] {
    rlimit small{1 << 20, 1 << 20};  // 1 MiB, below the 1 GiB the sandbox sets
    if (setrlimit(RLIMIT_FSIZE, &small) != 0) return std::string("setup failed");
    rlimit soft_only{100, 200};
    if (setrlimit(RLIMIT_NPROC, &soft_only) != 0) return std::string("setup failed");
    if (!apply_child_limits()) return std::string("apply_child_limits failed");
    rlimit fsize{}, nproc{};
    getrlimit(RLIMIT_FSIZE, &fsize);
    getrlimit(RLIMIT_NPROC, &nproc);
    return std::to_string(fsize.rlim_cur) + "/" + std::to_string(fsize.rlim_max) + " " +
           std::to_string(nproc.rlim_cur) + "/" + std::to_string(nproc.rlim_max);
  });
  EXPECT_EQ(out, "1048576/1048576 100/200");
}

TEST(Sandbox, NetworkNamespaceEnteredOrWarned) {
  const std::string parent_ns = net_ns();
  std::string out = in_child([&] { return namespace_verdict(parent_ns); });
  if (out.starts_with("warning: ")) {
    EXPECT_NE(out.find("runner sandbox"), std::string::npos) << out;
    std::cout << "no network namespace here: " << out << "\n";
  } else {
    EXPECT_EQ(out, "entered");
  }
  EXPECT_EQ(net_ns(), parent_ns);  // the test process itself is untouched
}

// The path taken by an unprivileged user: CLONE_NEWNET alone is refused, a user namespace
// (where the kernel allows them) makes it possible, with the uid mapped to itself.
TEST(Sandbox, NetworkNamespaceUnprivilegedFallback) {
  const std::string parent_ns = net_ns();
  std::string out = in_child([&] {
    if (getuid() == 0) {
      const uid_t nobody = 65534;
      if (setgroups(0, nullptr) != 0 || setgid(nobody) != 0 || setuid(nobody) != 0) return std::string("setuid failed");
      // setuid made us non-dumpable, which makes /proc/self/uid_map root's; undo that.
      prctl(PR_SET_DUMPABLE, 1);
    }
    const uid_t uid = getuid();
    std::string verdict = namespace_verdict(parent_ns);
    if (verdict == "entered" && getuid() != uid) verdict += " but uid not mapped: " + std::to_string(getuid());
    return verdict;
  });
  if (out.starts_with("warning: ")) {
    EXPECT_NE(out.find("no network namespace (unshare: "), std::string::npos) << out;
    EXPECT_NE(out.find("can reach the network"), std::string::npos) << out;
  } else {
    EXPECT_EQ(out, "entered");
  }
}

}  // namespace
TEST(Sandbox, CudaToolDetection) {
  ScopedEnv a("CUDA_INJECTION64_PATH", nullptr);
  ScopedEnv b("LD_PRELOAD", nullptr);
  ScopedEnv c("NV_NSIGHT_INJECTION_TRANSPORT_TYPE", nullptr);
  ScopedEnv d("NV_TPS_LAUNCH_TOKEN", nullptr);
  ScopedEnv e("KAGENT_RUNNER_NETNS", nullptr);
  EXPECT_FALSE(cuda_tool_attached());
  {
    // What ncu --target-processes all sets in a child it follows (seen with Nsight Compute 2025.3).
    ScopedEnv uds("NV_NSIGHT_INJECTION_TRANSPORT_TYPE", "uds");
    EXPECT_TRUE(cuda_tool_attached());
  }
  {
    ScopedEnv tok("NV_TPS_LAUNCH_TOKEN", "Interactive Profile");
    EXPECT_TRUE(cuda_tool_attached());
  }
  {
    ScopedEnv inj("CUDA_INJECTION64_PATH", "/opt/x/libinject.so");
    EXPECT_TRUE(cuda_tool_attached());
  }
  {
    ScopedEnv off("KAGENT_RUNNER_NETNS", "0");
    EXPECT_TRUE(cuda_tool_attached());
    EXPECT_FALSE(cuda_tool_injected());  // asked for, not a tool's library
  }
  {
    ScopedEnv inj("LD_PRELOAD", "/opt/x/libpreload.so");
    EXPECT_TRUE(cuda_tool_injected());
  }
  {
    ScopedEnv on("KAGENT_RUNNER_NETNS", "1");
    EXPECT_FALSE(cuda_tool_attached());
  }
}

}  // namespace kagent
