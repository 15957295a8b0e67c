#pragma once
// How kagent starts the Python children that run untrusted code (the reference server runs a
// problem file; the ModelNew worker runs a solution): in a jail of their own (sandbox/jail.hpp),
// with their own user, mount, network, IPC and pid namespaces; a file system view of the system
// directories, the CUDA toolkit, the Python install, kagent's tools/ and the one problem (and
// solution) file, read-only, plus one writable folder of their own; a private /tmp and /dev with the
// GPU's nodes; no capabilities; the runner's environment allowlist (no keys); a memory ceiling. No
// host file, no other process (kagent's /proc entry included), no network and no host IPC object
// is reachable from inside. CUDA IPC with the runner still works: legacy IPC handles cross pid
// namespaces on Linux (measured with the 580 driver; benchmarks/RESULTS.md).
//
// Where the kernel refuses the namespaces (a container without user namespaces), the child runs
// under kagent-sandbox-exec (its own network namespace, writes confined by Landlock) and the
// launcher says so in a warning, which every report carries.
#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "kagent/sandbox/spawn.hpp"

namespace kagent {

struct PythonChild {
  std::string name;                    // "reference server", "ModelNew worker": for messages
  std::vector<std::string> read_only;  // beyond system, toolkit and Python: tools/, the problem file, ...
  std::vector<std::string> writable;   // its own folders (cache, build), which must exist
  std::string exec_dir;                // where kagent-sandbox-exec is (the fallback); empty: beside kagent
  bool gpu = true;                     // false: no GPU device files in its jail (a build that must not touch the GPU)
};

// A ChildOptions::launch for `child`.
std::function<pid_t(const sandbox::SpawnRequest&, std::string* warning)> python_child_launcher(PythonChild child);

// The jail's ceilings, documented in docs/sandbox.md.
inline constexpr std::uint64_t kPythonChildTmpBytes = std::uint64_t{4} << 30;  // /tmp: Triton's, nvcc's files
inline constexpr std::uint64_t kPythonChildShmBytes = std::uint64_t{1} << 30;  // /dev/shm
inline constexpr int kPythonChildMaxProcesses = 8192;                          // pids, threads included (torch's pools)

}  // namespace kagent
