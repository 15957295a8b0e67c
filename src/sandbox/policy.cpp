#include "kagent/sandbox/policy.hpp"

#include "kagent/sandbox/network.hpp"

namespace kagent::sandbox {

SandboxPolicy runner_policy() {
  SandboxPolicy p;
  p.name = "runner";
  p.environment = runner_environment();
  p.network_namespace = true;
  return p;
}

SandboxPolicy reference_server_policy() {
  SandboxPolicy p = runner_policy();
  p.name = "reference server";
  // Python and torch read the host's site-packages and write their caches (torch.compile's
  // kernels in ~/.cache or TMPDIR): the file system stays the host's, the environment scrubbed.
  p.network_namespace = false;
  return p;
}

SandboxPolicy modelnew_worker_policy() {
  SandboxPolicy p = runner_policy();
  p.name = "ModelNew worker";
  p.network_namespace = false;  // entered by kagent-sandbox-exec, before python3 starts
  return p;
}

SandboxPolicy shell_policy(const std::string& workspace) {
  SandboxPolicy p;
  p.name = "shell";
  p.environment = shell_environment(workspace);
  p.network_namespace = true;
  p.private_view = true;
  p.writable = {workspace};
  p.max_processes = 1024;
  return p;
}

SandboxPolicy compile_worker_policy(const std::vector<std::string>& toolkit_dirs, rlim_t memory_bytes,
                                    rlim_t cpu_seconds) {
  SandboxPolicy p;
  p.name = "compile worker";
  p.environment = compile_worker_environment();
  p.network_namespace = true;
  p.private_view = true;
  p.visible = toolkit_dirs;
  p.limits.file_bytes = 0;  // it writes no file at all: its cubin goes to a pipe
  p.limits.processes = 64;
  // NVRTC loads no GPU driver, so its address space is close to the memory it uses. Not so under
  // AddressSanitizer (its shadow memory reserves terabytes at start) nor under a CUDA tool that
  // follows kagent's children (ncu --target-processes all injects its library into the worker,
  // which then aborts at the limit): there the CPU-time and wall-clock limits bound it alone.
  p.limits.address_space_bytes = kAddressSanitizerBuild || cuda_tool_injected() ? 0 : memory_bytes;
  p.limits.cpu_seconds = cpu_seconds;
  return p;
}

SandboxPolicy agent_run_policy() {
  SandboxPolicy p;
  p.name = "agent run";
  p.restricted = false;  // kagent itself: it sandboxes its own children
  return p;
}

SandboxPolicy helper_policy() {
  SandboxPolicy p;
  p.name = "helper";
  p.restricted = false;
  return p;
}

}  // namespace kagent::sandbox
