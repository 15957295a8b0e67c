#include "kagent/sandbox/process_setup.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace kagent::sandbox {

namespace {

// RLIM_INFINITY is the largest rlim_t, so std::min handles "unlimited" without a special case.
bool lower_limit(int resource, rlim_t value) {
  rlimit cur{};
  if (getrlimit(resource, &cur) != 0) return false;
  rlimit next{std::min(cur.rlim_cur, value), std::min(cur.rlim_max, value)};
  return setrlimit(resource, &next) == 0;
}

// The soft limit sends SIGXCPU (which ends the process: its default action); the hard limit, a
// second later, SIGKILL for one that catches it. Each only ever lowered.
bool lower_cpu_limit(rlim_t seconds) {
  rlimit cur{};
  if (getrlimit(RLIMIT_CPU, &cur) != 0) return false;
  const rlim_t hard = std::min(cur.rlim_max, seconds < RLIM_INFINITY - 1 ? seconds + 1 : seconds);
  rlimit next{std::min({cur.rlim_cur, seconds, hard}), hard};
  return setrlimit(RLIMIT_CPU, &next) == 0;
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

bool write_id_maps(const char* uid_map, const char* gid_map) {
  if (!write_proc_file("/proc/self/setgroups", "deny") && errno != ENOENT) return false;
  return write_proc_file("/proc/self/uid_map", uid_map) && write_proc_file("/proc/self/gid_map", gid_map);
}

bool apply_child_limits(const ProcessLimits& limits) {
  if (setpgid(0, 0) != 0) return false;
  // Die with kagent instead of running on as an orphan. (Linux sends this when the *thread* that
  // forked exits: the worker thread that owns the child, which has the same lifetime.)
  if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0) return false;
  // No setuid/file-capability escalation from anything the child executes.
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) return false;
  if (!lower_limit(RLIMIT_CORE, limits.core_bytes)) return false;
  if (!lower_limit(RLIMIT_FSIZE, limits.file_bytes)) return false;
  if (limits.processes > 0 && !lower_limit(RLIMIT_NPROC, limits.processes)) return false;
  if (limits.address_space_bytes > 0 && !lower_limit(RLIMIT_AS, limits.address_space_bytes)) return false;
  if (limits.cpu_seconds > 0 && !lower_cpu_limit(limits.cpu_seconds)) return false;
  return true;
}

void reset_signals() {
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  for (int sig = 1; sig < NSIG; ++sig) sigaction(sig, &dfl, nullptr);
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
}

void close_all_except(const std::vector<int>& keep) {
  unsigned int from = 0;
  for (int fd : keep) {
    if (static_cast<unsigned int>(fd) > from) syscall(SYS_close_range, from, static_cast<unsigned int>(fd) - 1, 0);
    from = static_cast<unsigned int>(fd) + 1;
  }
  syscall(SYS_close_range, from, ~0U, 0);
}

}  // namespace kagent::sandbox
