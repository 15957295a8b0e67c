#include "kagent/sandbox/spawn.hpp"

#include <fcntl.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstring>

#include <fmt/format.h>

#include "kagent/common/error.hpp"
#include "kagent/sandbox/process.hpp"
#include "kagent/sandbox/process_setup.hpp"

extern char** environ;

namespace kagent::sandbox {

namespace {

// argv/envp for execve, built before fork (the child may not allocate).
struct CStrings {
  explicit CStrings(const std::vector<std::string>& strings) : owned(strings) {
    for (auto& s : owned) ptrs.push_back(s.data());
    ptrs.push_back(nullptr);
  }
  std::vector<std::string> owned;
  std::vector<char*> ptrs;
};

}  // namespace

std::vector<std::string> environment_for(const SandboxPolicy& policy, const std::vector<std::string>& extra) {
  std::vector<std::string> env;
  if (policy.environment) {
    EnvPolicy p = *policy.environment;
    p.set.insert(p.set.end(), extra.begin(), extra.end());
    return child_environment(p);
  }
  for (char** e = environ; *e != nullptr; ++e) {
    bool replaced = std::any_of(extra.begin(), extra.end(),
                                [&](const std::string& x) { return variable_name(x) == variable_name(*e); });
    if (!replaced) env.emplace_back(*e);
  }
  env.insert(env.end(), extra.begin(), extra.end());
  return env;
}

pid_t spawn(const SandboxPolicy& policy, const SpawnRequest& request) {
  if (request.argv.empty()) throw EnvError(fmt::format("{}: nothing to start", policy.name));
  std::string exe = find_in_path(request.argv[0]);
  if (exe.empty()) throw EnvError(fmt::format("{}: '{}' not found or not executable", policy.name, request.argv[0]));
  CStrings argv(request.argv);
  CStrings envp(environment_for(policy, request.extra_env));

  int devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
  int in = above_stdio(request.stdin_fd >= 0 ? request.stdin_fd : devnull);
  int out = above_stdio(request.stdout_fd >= 0 ? request.stdout_fd : devnull);
  int err = above_stdio(request.stderr_fd >= 0 ? request.stderr_fd : out);
  const bool restricted = policy.restricted;
  const ProcessLimits limits = policy.limits;
  const std::string name = policy.name;
  const pid_t parent = getpid();
  pid_t pid = fork();
  if (pid == 0) {
    // Only async-signal-safe calls from here to execve.
    if (in < 0 || out < 0 || err < 0 || dup2(in, 0) < 0 || dup2(out, 1) < 0 || dup2(err, 2) < 0) {
      report_setup_failure(name.c_str(), "standard descriptors", nullptr, errno);
      _exit(kSetupFailedExit);
    }
    close_all_except({0, 1, 2});
    reset_signals();
    bool ok = restricted ? apply_child_limits(limits) : setpgid(0, 0) == 0 && prctl(PR_SET_PDEATHSIG, SIGKILL) == 0;
    if (!ok) {
      report_setup_failure(name.c_str(), restricted ? "process limits" : "process group", nullptr, errno);
      _exit(kSetupFailedExit);
    }
    // kagent died before PR_SET_PDEATHSIG took effect: no one would ever stop us.
    if (getppid() != parent) _exit(kSetupFailedExit);
    execve(exe.c_str(), argv.ptrs.data(), envp.ptrs.data());
    report_setup_failure(name.c_str(), "execute", exe.c_str(), errno);
    _exit(kExecFailedExit);
  }
  int fork_errno = errno;
  for (int fd : {devnull, in, out, err})
    if (fd >= 0) close(fd);
  if (pid < 0) throw EnvError(fmt::format("{}: cannot fork ({})", policy.name, std::strerror(fork_errno)));
  // Also from this side, so that a kill(-pid) right after fork cannot miss the child (EACCES once
  // it has exec'd is fine: it made its group itself by then).
  setpgid(pid, pid);
  return pid;
}

}  // namespace kagent::sandbox
