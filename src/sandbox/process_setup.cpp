#include "kagent/sandbox/process_setup.hpp"

#include <fcntl.h>
#include <linux/capability.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>

namespace kagent::sandbox {

namespace {

// RLIM_INFINITY is the largest rlim_t, so std::min handles "unlimited" without a special case.
bool lower_limit(int resource, rlim_t value) {
  rlimit cur{};
  if (getrlimit(resource, &cur) != 0) return false;
  rlimit next{std::min(cur.rlim_cur, value), std::min(cur.rlim_max, value)};
  return setrlimit(resource, &next) == 0;
}

void put(int fd, const char* text) {
  if (text == nullptr) return;
  size_t n = std::strlen(text);
  while (n > 0) {
    ssize_t w = write(fd, text, n);
    if (w <= 0) return;
    text += w;
    n -= static_cast<size_t>(w);
  }
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

int above_stdio(int fd) {
  return fd < 0 ? -1 : fcntl(fd, F_DUPFD_CLOEXEC, 3);
}

void report_setup_failure(const char* who, const char* step, const char* path, int err, int report_fd) {
  char num[16];
  int n = 0;
  unsigned v = static_cast<unsigned>(err);
  do {
    num[n++] = static_cast<char>('0' + v % 10);
    v /= 10;
  } while (v != 0 && n < 15);
  char digits[16];
  for (int i = 0; i < n; ++i) digits[i] = num[n - 1 - i];
  digits[n] = '\0';
  // strerrordesc_np is a table lookup: no locale, no allocation (unlike strerror).
  const char* desc = strerrordesc_np(err);
  for (int fd : {2, report_fd}) {
    if (fd < 0) continue;
    if (fd == 2) {
      put(fd, "kagent sandbox: ");
      put(fd, who);
      put(fd, ": ");
    }
    put(fd, step);
    if (path != nullptr) {
      put(fd, " ");
      put(fd, path);
    }
    put(fd, ": ");
    put(fd, desc != nullptr ? desc : "unknown error");
    put(fd, " (errno ");
    put(fd, digits);
    put(fd, ")\n");
  }
}

bool write_proc_file(const char* path, std::string_view text) {
  int fd = open(path, O_WRONLY | O_CLOEXEC);
  if (fd < 0) return false;
  ssize_t n = write(fd, text.data(), text.size());
  int saved = errno;
  close(fd);
  errno = saved;
  return n == static_cast<ssize_t>(text.size());
}

IdMaps identity_id_maps() {
  const std::string uid = std::to_string(getuid()), gid = std::to_string(getgid());
  return {uid + " " + uid + " 1", gid + " " + gid + " 1"};
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
  if (limits.data_bytes != RLIM_INFINITY && !lower_limit(RLIMIT_DATA, limits.data_bytes)) return false;
  if (limits.oom_score_adj > 0) {
    // Raising one's own score needs no privilege; the text is built here without allocating.
    char text[8];
    int n = 0, v = limits.oom_score_adj > 1000 ? 1000 : limits.oom_score_adj;
    char digits[8];
    int d = 0;
    do {
      digits[d++] = static_cast<char>('0' + v % 10);
      v /= 10;
    } while (v > 0);
    while (d > 0) text[n++] = digits[--d];
    if (!write_proc_file("/proc/self/oom_score_adj", std::string_view(text, static_cast<size_t>(n)))) return false;
  }
  if (limits.address_space_bytes > 0 && !lower_limit(RLIMIT_AS, limits.address_space_bytes)) return false;
  if (limits.cpu_seconds > 0 && !lower_cpu_limit(limits.cpu_seconds)) return false;
  return true;
}

bool drop_all_capabilities(int cap_last) {
  for (int cap = 0; cap <= cap_last; ++cap)
    if (prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0 && errno != EINVAL) return false;
  if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) != 0 && errno != EINVAL) return false;
  __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct none[2] = {};
  return syscall(SYS_capset, &header, none) == 0;
}

int capability_last() {
  int n = 63;
  if (FILE* f = std::fopen("/proc/sys/kernel/cap_last_cap", "re")) {
    if (std::fscanf(f, "%d", &n) != 1) n = 63;
    std::fclose(f);
  }
  return n;
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
