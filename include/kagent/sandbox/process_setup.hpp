#pragma once
// The process-level part of every sandbox: what a child gets between fork and exec (its own
// process group, death with its parent, no_new_privs, resource limits, default signals, no
// inherited descriptors). Every function here is async-signal-safe: kagent is multi-threaded, so
// a forked child may only make raw system calls until it executes its program.
#include <sys/resource.h>

#include <string>
#include <string_view>
#include <vector>

namespace kagent::sandbox {

// Whether this build runs under AddressSanitizer (CI's second pass). Its shadow memory reserves
// terabytes of address space at start, so a child built the same way (kagent-compile) cannot run
// under RLIMIT_AS: such builds leave that one limit off and rely on the CPU and wall-clock limits.
#if defined(__SANITIZE_ADDRESS__)
inline constexpr bool kAddressSanitizerBuild = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
inline constexpr bool kAddressSanitizerBuild = true;
#else
inline constexpr bool kAddressSanitizerBuild = false;
#endif
#else
inline constexpr bool kAddressSanitizerBuild = false;
#endif

// Resource limits a child gets; a limit is only ever lowered, never raised (an operator may have
// set tighter ones for kagent). 0 for `processes`, `address_space_bytes` or `cpu_seconds` leaves
// that limit alone.
struct ProcessLimits {
  rlim_t core_bytes = 0;                // no multi-GB GPU core dumps
  rlim_t file_bytes = rlim_t{1} << 30;  // 1 GiB per file written
  rlim_t processes = 4096;              // RLIMIT_NPROC: binds non-root users only (see pid_limit.hpp)
  // RLIMIT_DATA: private writable memory (heap, anonymous mappings), the memory ceiling of a jail
  // without a cgroup (jail.hpp). Not RLIMIT_AS: CUDA programs reserve huge virtual ranges.
  rlim_t data_bytes = RLIM_INFINITY;
  // The first process the kernel's OOM killer ends when the machine runs out of memory: children
  // that run untrusted code get 1000, so that a problem file or a command allocating without end is
  // ended before kagent or anything else on the machine. 0 leaves it as inherited.
  int oom_score_adj = 0;
  // RLIMIT_AS: the child's virtual memory. Only for children that load no GPU driver (the driver
  // reserves far more address space than it uses): the compile worker.
  rlim_t address_space_bytes = 0;
  rlim_t cpu_seconds = 0;  // RLIMIT_CPU: SIGXCPU at the limit, SIGKILL a second later
};

// Own process group (a timeout kills the child and all it started with one kill(-pgid)), death
// with the parent thread (PR_SET_PDEATHSIG), PR_SET_NO_NEW_PRIVS, and `limits`. Returns false
// (errno set) if a step failed.
bool apply_child_limits(const ProcessLimits& limits = {});

// No capabilities from here on, nor after any exec: the bounding set emptied (needs CAP_SETPCAP,
// which the first process of a user namespace holds), the ambient set cleared, and the effective,
// permitted and inheritable sets zeroed with capset. `cap_last` is
// /proc/sys/kernel/cap_last_cap, read by the parent (capability_last()). False with errno set.
bool drop_all_capabilities(int cap_last);
int capability_last();

// Every signal back to its default disposition and none blocked: kagent's handlers, an ignored
// SIGPIPE or a blocked signal would otherwise survive exec into the child.
void reset_signals();

// Closes every descriptor except the sorted `keep` (other threads' sockets, pipes and files).
void close_all_except(const std::vector<int>& keep);

// A duplicate of `fd` at 3 or above, close-on-exec (so that a dup2 onto 0-2 in the child can never
// overwrite another of its descriptors, even when kagent runs with closed stdio); -1 for -1. The
// caller closes it (and still owns `fd`).
int above_stdio(int fd);

// The one set-up failure line of a child, on its stderr and, when `report_fd` >= 0, on that
// descriptor too (without the "kagent sandbox: WHO: " prefix there):
//   kagent sandbox: WHO: STEP[ PATH]: DESCRIPTION (errno N)
// Async-signal-safe. The child then exits with kSetupFailedExit (exit_codes.hpp).
void report_setup_failure(const char* who, const char* step, const char* path, int err, int report_fd = -1);

// Writes `text` to a /proc file in one write(2) (the uid/gid map files reject partial writes).
// Only open/write/close. False with errno set on failure.
bool write_proc_file(const char* path, std::string_view text);

// Maps the caller's outside uid/gid to the same ids inside a fresh user namespace ("setgroups
// deny" first, as an unprivileged writer needs; its absence on old kernels is fine). The maps
// are prepared before (identity_id_maps): a child between clone and exec must not allocate.
bool write_id_maps(const char* uid_map, const char* gid_map);

// The uid and gid maps ("ID ID 1") that keep the caller's ids inside a user namespace it makes.
// Take them before entering it: inside, getuid() reads as the overflow id.
struct IdMaps {
  std::string uid_map, gid_map;
};
IdMaps identity_id_maps();

}  // namespace kagent::sandbox
