#pragma once
// What each of kagent's children may see and do, one policy per use. Every child process is
// started through sandbox::spawn (spawn.hpp) or, for the shell, through the same pieces under its
// own namespaces; the table in docs/sandbox.md follows these presets.
#include <optional>
#include <string>
#include <vector>

#include "kagent/sandbox/environment.hpp"
#include "kagent/sandbox/process_setup.hpp"

namespace kagent::sandbox {

struct SandboxPolicy {
  std::string name;  // "runner", "reference server", "shell", "compile worker", "agent run": for messages
  // nullopt: kagent's own environment (only `kagent optimize` children of `bench --agent`, which
  // are kagent itself and need the user's key).
  std::optional<EnvPolicy> environment;
  // no_new_privs and these rlimits; false only for children that are kagent itself.
  bool restricted = true;
  ProcessLimits limits;
  // Own network namespace. The runner enters it itself before its first CUDA call; the shell
  // and the compile worker as part of their file system view.
  bool network_namespace = false;
  // A private file system view (mount namespace): only `visible` (read-only) and `writable`
  // paths exist. Empty lists with private_view false: the host's file system.
  bool private_view = false;
  std::vector<std::string> visible;
  std::vector<std::string> writable;
  // A limit on live processes that holds for root too (a pid namespace's pid_max), 0 for none.
  int max_processes = 0;
};

SandboxPolicy runner_policy();
SandboxPolicy reference_server_policy();
// A ModelNew solution's worker (python3 -m kagent_modelnew.worker): the runner's environment
// allowlist and limits; kagent-sandbox-exec, which starts it, gives it its own network namespace
// and confines its writes to its build folder (Landlock).
SandboxPolicy modelnew_worker_policy();
// The model's shell in `workspace` (visible paths are worked out by shell_tool.cpp's view).
SandboxPolicy shell_policy(const std::string& workspace);
// The compile worker's default limits (docs/compilation.md): NVRTC compiles a
// real kernel in well under a second and a few hundred MiB; a macro or template that expands
// without bound would otherwise take a CPU and memory until the machine gives out.
inline constexpr rlim_t kCompileWorkerMemoryBytes = rlim_t{4} << 30;  // RLIMIT_AS
inline constexpr rlim_t kCompileWorkerSeconds = 120;                  // CPU time, and kagent's wall-clock timeout
// NVRTC on untrusted source: the toolkit's headers and NVRTC's own libraries, nothing else; at
// most `memory_bytes` of address space and `cpu_seconds` of CPU time.
SandboxPolicy compile_worker_policy(const std::vector<std::string>& toolkit_dirs,
                                    rlim_t memory_bytes = kCompileWorkerMemoryBytes,
                                    rlim_t cpu_seconds = kCompileWorkerSeconds);
// `bench --agent`: kagent optimize as a child, in its own process group, dying with the batch.
SandboxPolicy agent_run_policy();
// Trusted helper programs kagent runs itself (git, python3 for doctor): default signals and
// their own process group, kagent's environment.
SandboxPolicy helper_policy();

}  // namespace kagent::sandbox
