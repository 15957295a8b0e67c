#pragma once
// A child's own network namespace, entered by the child itself before it starts threads (the
// runner before its first CUDA call), and reported in its hello line.
#include <string>

namespace kagent::sandbox {

struct NetnsResult {
  bool entered = false;
  std::string warning;  // set when no namespace could be made: one line saying why
};
// unshare(CLONE_NEWNET); if not permitted, a user namespace plus a network namespace (mapping
// the current uid and gid); else a warning. Must run before the process starts threads.
NetnsResult enter_network_namespace();

// Nsight Compute, Nsight Systems and compute-sanitizer inject a library into CUDA processes that
// talks to the tool over a (per network namespace) socket: under such a tool the runner must stay
// in the host's network namespace, or it hangs at its first CUDA call. cuda_tool_injected: the
// environment shows one (CUDA_INJECTION64_PATH, LD_PRELOAD, NV_NSIGHT_INJECTION_*, NV_TPS_*);
// cuda_tool_attached: that, or KAGENT_RUNNER_NETNS=0 asking for no namespace.
bool cuda_tool_injected();
bool cuda_tool_attached();
inline constexpr const char* kCudaToolNetnsWarning =
    "runner sandbox: no network namespace, because a CUDA tool (ncu, nsys, compute-sanitizer) is attached or "
    "KAGENT_RUNNER_NETNS=0; the runner can reach the network";

}  // namespace kagent::sandbox
