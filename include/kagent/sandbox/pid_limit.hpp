#pragma once
// A limit on live processes that holds for root. RLIMIT_NPROC does not bind uid 0 (nor anyone
// with CAP_SYS_RESOURCE), so a fork bomb in a shell run as root is stopped by its pid namespace
// instead: since Linux 6.14 pid_max is per pid namespace, and a namespace whose pid_max is N
// holds at most N - 1 processes. On older kernels the sysctl is global and must not be touched:
// there, only RLIMIT_NPROC remains (which holds for non-root users) and the caller says so.
#include <string>

namespace kagent::sandbox {

struct PidLimitSupport {
  bool per_namespace = false;  // pid_max can be set for one pid namespace
  std::string reason;          // why not, when not
};
// From the kernel release (uname): 6.14 or later.
PidLimitSupport pid_limit_support();

// In the first process of a fresh pid namespace, with CAP_SYS_ADMIN in its user namespace: at
// most `processes` live processes in it from now on. Async-signal-safe; `text` is the value to
// write, prepared by the parent (pid_max_text). False with errno set.
bool limit_pid_namespace(const char* text);
std::string pid_max_text(int processes);

}  // namespace kagent::sandbox
