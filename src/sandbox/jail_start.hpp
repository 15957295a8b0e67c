#pragma once
// The start of a jail, shared by spawn_jailed and the capture form (capture.cpp): besides the pid,
// the memory cgroup (whose OOM count the capture reads) and a report descriptor that carries the
// set-up failure line and, from the jail's init, the program's wait status ("status N").
#include <sys/types.h>

#include <memory>

#include "kagent/sandbox/jail.hpp"
#include "kagent/sandbox/memory_cgroup.hpp"

namespace kagent::sandbox {

struct JailStart {
  pid_t pid = -1;
  std::unique_ptr<MemoryCgroup> cgroup;  // null when the ceiling is RLIMIT_DATA or none
  MemoryCeiling memory;
};

// `report_fd`: -1 for none; else the write end of a pipe, which the child keeps until it runs the
// program (with an init: until init ends).
JailStart start_jail(const JailSpec& spec, const SpawnRequest& request, int report_fd);

}  // namespace kagent::sandbox
