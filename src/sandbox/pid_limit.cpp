#include "kagent/sandbox/pid_limit.hpp"

#include <sys/utsname.h>

#include <algorithm>
#include <cstdio>

#include <fmt/format.h>

#include "kagent/sandbox/process_setup.hpp"

namespace kagent::sandbox {

namespace {
// The kernel refuses a pid_max below RESERVED_PIDS + 1.
constexpr int kMinPidMax = 301;
}  // namespace

PidLimitSupport pid_limit_support() {
  PidLimitSupport s;
  utsname u{};
  int major = 0, minor = 0;
  if (uname(&u) != 0 || std::sscanf(u.release, "%d.%d", &major, &minor) != 2) {
    s.reason = "the kernel release is unreadable";
    return s;
  }
  s.per_namespace = major > 6 || (major == 6 && minor >= 14);
  if (!s.per_namespace)
    s.reason = fmt::format("Linux {} has one global pid_max (per pid namespace since 6.14)", u.release);
  return s;
}

std::string pid_max_text(int processes) {
  return std::to_string(std::max(processes + 1, kMinPidMax));
}

bool limit_pid_namespace(const char* text) {
  std::string_view v(text);
  return write_proc_file("/proc/sys/kernel/pid_max", v);
}

}  // namespace kagent::sandbox
