#pragma once
// shell {command, timeout_s?}: `bash -c command` in the workspace, sandboxed: no network, no
// write access outside the workspace (Linux user + mount + network namespaces; bubblewrap where
// installed and namespaces are not), a time limit, an output cap. When no sandbox works the
// tool is not offered and the model is told why (ShellSandbox::reason).
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
};

// Checks once (by running a tiny sandboxed command) which sandbox works here.
ShellSandbox probe_shell_sandbox();

// nullptr when !sandbox.available.
std::unique_ptr<Tool> make_shell_tool(const Workspace& ws, const ShellSandbox& sandbox, ShellOptions options = {});

}  // namespace kagent::tools
