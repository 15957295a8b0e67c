#pragma once
// What the runner's sandbox consists of. The orchestrator applies the process-level parts
// between fork and exec (apply_child_limits, scrubbed_environment); the runner applies the
// namespace part itself at start-up, before any CUDA call (enter_network_namespace), and
// reports the outcome in its hello line.
#include <string>
#include <string_view>
#include <vector>

namespace kagent {

// In the forked child, before exec: own process group, die with the parent (PR_SET_PDEATHSIG),
// PR_SET_NO_NEW_PRIVS, RLIMIT_CORE 0, RLIMIT_FSIZE 1 GiB, RLIMIT_NPROC 4096 (lowered only).
// Async-signal-safe; returns false (errno set) if a step failed.
bool apply_child_limits();

// The runner's environment: PATH, HOME, TMPDIR, LANG=C, the variables the CUDA driver needs
// (CUDA_VISIBLE_DEVICES, CUDA_DEVICE_ORDER, CUDA_MODULE_LOADING, LD_LIBRARY_PATH, NVIDIA_*),
// kagent's cache location, profiler injection (LD_PRELOAD, CUDA_INJECTION64_PATH, NV_*, NSYS_*,
// NCU_*, NVTX_*: ncu and compute-sanitizer must see the runner), plus the given extras
// ("NAME=value"). API keys and everything else are dropped.
std::vector<std::string> scrubbed_environment(const std::vector<std::string>& extra);

struct NetnsResult {
  bool entered = false;
  std::string warning;  // set when no namespace could be made: one line saying why
};
// unshare(CLONE_NEWNET); if not permitted, a user namespace plus a network namespace (mapping
// the current uid and gid); else a warning. Must run before the process starts threads.
NetnsResult enter_network_namespace();

// Writes `text` to a /proc file in one write(2) (the uid/gid map files reject partial writes).
// Only open/write/close: safe in a child between fork and exec. False with errno set on failure.
bool write_proc_file(const char* path, std::string_view text);

// Nsight Compute, Nsight Systems and compute-sanitizer inject a library into CUDA processes that
// talks to the tool over a (per network namespace) socket: under such a tool the runner must stay
// in the host's network namespace, or it hangs at its first CUDA call. True when the environment
// shows one (CUDA_INJECTION64_PATH, LD_PRELOAD, NV_NSIGHT_INJECTION_*, NV_TPS_*), or when
// KAGENT_RUNNER_NETNS=0 asks for no namespace.
bool cuda_tool_attached();
inline constexpr const char* kCudaToolNetnsWarning =
    "runner sandbox: no network namespace, because a CUDA tool (ncu, nsys, compute-sanitizer) is attached or "
    "KAGENT_RUNNER_NETNS=0; the runner can reach the network";

}  // namespace kagent
