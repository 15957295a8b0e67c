#pragma once
// shell {command, timeout_s?}: `bash -c command` in the workspace, sandboxed (Linux user, mount,
// network and pid namespaces; bubblewrap where installed and namespaces are not): no network, a
// private view of the host holding only system directories, the CUDA toolkit, the programs on
// PATH and the workspace (the one writable place), a process limit, a time limit, an output cap. When no sandbox works
// the tool is not offered and the model is told why (ShellSandbox::reason).
#include <chrono>
#include <optional>
#include <string>

#include "kagent/tools/tool.hpp"
#include "kagent/tools/workspace.hpp"

namespace kagent::tools {

struct ShellOptions {
  std::chrono::seconds default_timeout{60};
  std::chrono::seconds max_timeout{600};
  size_t output_cap = 64 * 1024;  // bytes of stdout+stderr kept (head and tail, with a marker)
};

struct ShellSandbox {
  bool available = false;
  std::string method;  // "namespaces" or "bubblewrap"
  std::string reason;  // why not, when unavailable
  // How the number of processes is limited: "pid namespace: at most N processes", or why only
  // RLIMIT_NPROC (which does not bind root) is left.
  std::string process_limit;
};

// Checks once (by running a tiny sandboxed command) which sandbox works here.
ShellSandbox probe_shell_sandbox();

// nullptr when !sandbox.available.
std::unique_ptr<Tool> make_shell_tool(const Workspace& ws, const ShellSandbox& sandbox, ShellOptions options = {});

}  // namespace kagent::tools
