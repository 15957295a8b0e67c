#pragma once
// Starts a child process under a SandboxPolicy: its own process group, death with the parent
// thread, default signals, no inherited descriptors but its three standard ones, and, for a
// restricted policy, no_new_privs, the policy's rlimits and its environment allowlist.
#include <sys/types.h>

#include <string>
#include <vector>

#include "kagent/sandbox/exit_codes.hpp"
#include "kagent/sandbox/policy.hpp"

namespace kagent::sandbox {

struct SpawnRequest {
  std::vector<std::string> argv;       // argv[0]: a path (a bare name is looked up in PATH first)
  std::vector<std::string> extra_env;  // "NAME=value" on top of the policy's environment
  int stdin_fd = -1;                   // -1: /dev/null
  int stdout_fd = -1;                  // -1: /dev/null
  int stderr_fd = -1;                  // -1: the same as stdout
};

// The pid; throws EnvError when the program is missing or fork fails. A setup failure in the
// child is a line on its stderr and exit kSetupFailedExit (exec failure kExecFailedExit).
pid_t spawn(const SandboxPolicy& policy, const SpawnRequest& request);

// The environment the policy gives a child (kagent's own when it has none), plus `extra`.
std::vector<std::string> environment_for(const SandboxPolicy& policy, const std::vector<std::string>& extra);

}  // namespace kagent::sandbox
