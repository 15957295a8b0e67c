#pragma once
// The process-level part of every sandbox: what a child gets between fork and exec (its own
// process group, death with its parent, no_new_privs, resource limits, default signals, no
// inherited descriptors). Every function here is async-signal-safe: kagent is multi-threaded, so
// a forked child may only make raw system calls until it executes its program.
#include <sys/resource.h>

#include <string_view>
#include <vector>

namespace kagent::sandbox {

// Resource limits a child gets; a limit is only ever lowered, never raised (an operator may have
// set tighter ones for kagent). 0 for `processes`, `address_space_bytes` or `cpu_seconds` leaves
// that limit alone.
struct ProcessLimits {
  rlim_t core_bytes = 0;                // no multi-GB GPU core dumps
  rlim_t file_bytes = rlim_t{1} << 30;  // 1 GiB per file written
  rlim_t processes = 4096;              // RLIMIT_NPROC: binds non-root users only (see pid_limit.hpp)
  // RLIMIT_AS: the child's virtual memory. Only for children that load no GPU driver (the driver
  // reserves far more address space than it uses): the compile worker.
  rlim_t address_space_bytes = 0;
  rlim_t cpu_seconds = 0;  // RLIMIT_CPU: SIGXCPU at the limit, SIGKILL a second later
};

// Own process group (a timeout kills the child and all it started with one kill(-pgid)), death
// with the parent thread (PR_SET_PDEATHSIG), PR_SET_NO_NEW_PRIVS, and `limits`. Returns false
// (errno set) if a step failed.
bool apply_child_limits(const ProcessLimits& limits = {});

// Every signal back to its default disposition and none blocked: kagent's handlers, an ignored
// SIGPIPE or a blocked signal would otherwise survive exec into the child.
void reset_signals();

// Closes every descriptor except the sorted `keep` (other threads' sockets, pipes and files).
void close_all_except(const std::vector<int>& keep);

// Writes `text` to a /proc file in one write(2) (the uid/gid map files reject partial writes).
// Only open/write/close. False with errno set on failure.
bool write_proc_file(const char* path, std::string_view text);

// Maps the caller's outside uid/gid to the same ids inside a fresh user namespace ("setgroups
// deny" first, as an unprivileged writer needs; its absence on old kernels is fine). The maps
// are prepared by the parent ("UID UID 1").
bool write_id_maps(const char* uid_map, const char* gid_map);

}  // namespace kagent::sandbox
