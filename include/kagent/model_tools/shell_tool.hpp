#pragma once
// shell {command, timeout_s?}: `bash -c command` in the workspace, in a jail (sandbox/jail.hpp:
// Linux user, mount, network, IPC and pid namespaces, no capabilities; bubblewrap where installed
// and namespaces are not): no network, a private view of the host holding only system
// directories, the CUDA toolkit, the programs on PATH outside home directories and the workspace
// (the one writable place), memory, file, tmpfs and workspace ceilings, a process limit, a time
// limit, an output cap. When no sandbox works the tool is not offered and the model is told why
// (ShellSandbox::reason).
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

#include "kagent/model_tools/tool.hpp"
#include "kagent/model_tools/workspace.hpp"

namespace kagent::model_tools {

struct ShellOptions {
  std::chrono::seconds default_timeout{60};
  std::chrono::seconds max_timeout{600};
  size_t output_cap = 64 * 1024;  // bytes of stdout+stderr kept (head and tail, with a marker)
  // Ceilings (docs/sandbox.md); the result names the one a command hit.
  // The whole command's memory: a cgroup memory.max where kagent can make one (its tmpfs files
  // count too), else RLIMIT_DATA per process.
  std::uint64_t memory_bytes = std::uint64_t{4} << 30;
  std::uint64_t file_bytes = std::uint64_t{1} << 30;       // per file written (RLIMIT_FSIZE)
  std::uint64_t tmp_bytes = std::uint64_t{512} << 20;      // the private /tmp, and /var/tmp, each
  std::uint64_t shm_bytes = std::uint64_t{256} << 20;      // the private /dev/shm
  std::uint64_t workspace_bytes = std::uint64_t{4} << 30;  // checked after each command
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

}  // namespace kagent::model_tools
