#include "kagent/eval/sandbox.hpp"

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string_view>

#include <fmt/format.h>

extern char** environ;

namespace kagent {

namespace {

// Lowers a limit to at most `value`, never raising either the soft or the hard limit (an
// operator may have set tighter ones for kagent; the runner must not escape them).
// RLIM_INFINITY is the largest rlim_t, so std::min handles "unlimited" without a special case.
bool lower_limit(int resource, rlim_t value) {
  rlimit cur{};
  if (getrlimit(resource, &cur) != 0) return false;
  rlimit next{std::min(cur.rlim_cur, value), std::min(cur.rlim_max, value)};
  return setrlimit(resource, &next) == 0;
}

// Variables the runner may see: what the CUDA driver and a Python reference need to find
// libraries, devices and caches. Anything else (API keys above all) stays in kagent.
constexpr std::array<std::string_view, 13> kKeptVariables = {"PATH",
                                                             "LD_LIBRARY_PATH",
                                                             "CUDA_VISIBLE_DEVICES",
                                                             "CUDA_DEVICE_ORDER",
                                                             "CUDA_MODULE_LOADING",
                                                             "NVIDIA_VISIBLE_DEVICES",
                                                             "NVIDIA_DRIVER_CAPABILITIES",
                                                             "TMPDIR",
                                                             "KAGENT_CACHE_DIR",
                                                             "XDG_CACHE_HOME",
                                                             "HOME",
                                                             "SPDLOG_LEVEL",
                                                             "KAGENT_RUNNER_NETNS"};

// Profilers and checkers (ncu, nsys, compute-sanitizer) inject themselves into CUDA processes
// through these; the user runs them around kagent on purpose, so they reach the runner too.
constexpr std::array<std::string_view, 2> kProfilerVariables = {"LD_PRELOAD", "CUDA_INJECTION64_PATH"};
constexpr std::array<std::string_view, 4> kProfilerPrefixes = {"NV_", "NSYS_", "NCU_", "NVTX_"};

bool is_profiler_variable(std::string_view name) {
  for (auto v : kProfilerVariables)
    if (name == v) return true;
  for (auto p : kProfilerPrefixes)
    if (name.substr(0, p.size()) == p) return true;
  return false;
}

std::string_view name_of(std::string_view assignment) {
  return assignment.substr(0, assignment.find('='));
}

std::string no_namespace_warning(int err) {
  return fmt::format("runner sandbox: no network namespace (unshare: {}); the runner can reach the network",
                     std::strerror(err));
}

}  // namespace

bool write_proc_file(const char* path, std::string_view text) {
  int fd = open(path, O_WRONLY | O_CLOEXEC);
  if (fd < 0) return false;
  ssize_t n = write(fd, text.data(), text.size());
  int saved = errno;
  close(fd);
  errno = saved;
  return n == static_cast<ssize_t>(text.size());
}

bool apply_child_limits() {
  // Own process group: a timeout kills the runner and everything it started with one kill(-pgid).
  if (setpgid(0, 0) != 0) return false;
  // Die with kagent instead of holding a GPU as an orphan. (Linux sends this when the *thread*
  // that forked exits, which is the worker thread owning this runner: the same lifetime.)
  if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0) return false;
  // No setuid/file-capability escalation from anything the runner executes.
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) return false;
  if (!lower_limit(RLIMIT_CORE, 0)) return false;                 // no multi-GB GPU core dumps
  if (!lower_limit(RLIMIT_FSIZE, rlim_t{1} << 30)) return false;  // 1 GiB per file
  if (!lower_limit(RLIMIT_NPROC, 4096)) return false;             // no fork bombs
  return true;
}

std::vector<std::string> scrubbed_environment(const std::vector<std::string>& extra) {
  std::vector<std::string> env;
  for (std::string_view name : kKeptVariables) {
    std::string key(name);
    const char* value = std::getenv(key.c_str());
    if (value != nullptr) {
      env.push_back(key + "=" + value);
    } else if (name == "PATH") {
      env.push_back("PATH=/usr/local/bin:/usr/bin:/bin");  // /usr/bin/env must still find python3
    }
  }
  for (char** e = environ; *e != nullptr; ++e)
    if (is_profiler_variable(name_of(*e))) env.emplace_back(*e);
  env.push_back("LANG=C");  // stable, parseable messages from the driver and tools
  // Extras win over kept values of the same name (getenv would return the first duplicate).
  for (const auto& e : extra) {
    auto same = [&](const std::string& kept) { return name_of(kept) == name_of(e); };
    env.erase(std::remove_if(env.begin(), env.end(), same), env.end());
    env.push_back(e);
  }
  return env;
}

bool cuda_tool_attached() {
  for (char** e = environ; *e != nullptr; ++e) {
    std::string_view var = *e;
    std::string_view name = name_of(var);
    std::string_view value = var.substr(std::min(var.size(), name.size() + 1));
    if (name == "KAGENT_RUNNER_NETNS" && value == "0") return true;
    if (value.empty()) continue;
    if (name == "CUDA_INJECTION64_PATH" || name == "LD_PRELOAD" || name.substr(0, 20) == "NV_NSIGHT_INJECTION_" ||
        name.substr(0, 7) == "NV_TPS_")
      return true;
  }
  return false;
}

NetnsResult enter_network_namespace() {
  NetnsResult result;
  // Saved before unshare: inside a fresh user namespace they read as the overflow id.
  const uid_t uid = getuid();
  const gid_t gid = getgid();
  if (unshare(CLONE_NEWNET) == 0) {
    result.entered = true;
    return result;
  }
  int err = errno;
  if (err != EPERM) {
    result.warning = no_namespace_warning(err);
    return result;
  }
  // Unprivileged: a user namespace grants CAP_SYS_ADMIN over a network namespace created with it.
  if (unshare(CLONE_NEWUSER | CLONE_NEWNET) != 0) {
    result.warning = no_namespace_warning(errno);
    return result;
  }
  // The network namespace exists and is ours now, whatever happens to the id maps below.
  result.entered = true;
  // "deny" must precede gid_map for an unprivileged writer; a kernel without the file
  // (before 3.19) needs no such step, so ENOENT is fine.
  if (!write_proc_file("/proc/self/setgroups", "deny") && errno != ENOENT) {
    result.warning = fmt::format("runner sandbox: network namespace entered, but setgroups: {}", std::strerror(errno));
    return result;
  }
  if (!write_proc_file("/proc/self/uid_map", fmt::format("{} {} 1", uid, uid)) ||
      !write_proc_file("/proc/self/gid_map", fmt::format("{} {} 1", gid, gid))) {
    result.warning = fmt::format(
        "runner sandbox: network namespace entered, but the id map failed ({}); "
        "files may show as owned by nobody",
        std::strerror(errno));
  }
  return result;
}

}  // namespace kagent
