#pragma once
// A jailed child: a program started in namespaces of its own, each switchable (user, mount with a
// private FilesystemView, network, IPC, pid), with every capability dropped, no_new_privs, rlimits,
// a memory ceiling, an environment allowlist and a working directory. Every child that needs more
// than sandbox::spawn gives (the model's shell; kagent's Python children) starts through here.
//
// What the caller gets is the program's pid as far as signals and waitpid go:
//  - kill(-pid, SIGKILL) ends everything inside (the jail is one process group; with a pid
//    namespace, ending its first process ends every process in it);
//  - waitpid(pid) yields the program's exit status. With a pid namespace, pid is a tiny init
//    (kagent-jail-init, built beside kagent) that runs the program as its child: it forwards
//    SIGTERM, SIGINT and SIGHUP to the program, reaps orphans, and exits with the program's exit
//    code, or 128+N when the program was killed by signal N. When the program ends, init ends,
//    and with it every process left in the namespace. Init is a separate executable so that
//    pid 1 shows nothing of kagent: its command line is "jail-init -- PROGRAM ARGS...", its
//    environment the jail's, its memory its own;
//  - a set-up failure (a namespace, mount, limit, exec) is one line on the child's stderr,
//    "kagent sandbox: NAME: STEP PATH: DESCRIPTION (errno N)", and exit kSetupFailedExit (126);
//    an exec failure of the program kExecFailedExit (127), with the same kind of line.
// Without a pid namespace (GPU children that exchange CUDA IPC handles with the host's processes
// must share its pid namespace) there is no init: pid is the program itself.
#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

#include "kagent/common/error.hpp"
#include "kagent/sandbox/environment.hpp"
#include "kagent/sandbox/filesystem_view.hpp"
#include "kagent/sandbox/process_setup.hpp"
#include "kagent/sandbox/spawn.hpp"

namespace kagent::sandbox {

struct JailNamespaces {
  bool user = true;     // needed for the rest unless kagent is root
  bool mount = true;    // the spec's FilesystemView becomes the root
  bool network = true;  // loopback only
  bool ipc = true;      // own SysV IPC and POSIX message queues: no host segments
  bool pid = true;      // own pids and /proc; an init as pid 1 (see above)
};

struct JailSpec {
  std::string name;  // "shell", "reference server": for messages
  JailNamespaces namespaces;
  // Used when namespaces.mount; finished (FilesystemView::finish) by the caller.
  FilesystemView view;
  // Every capability dropped before exec (bounding, ambient, effective, permitted, inheritable):
  // no mount, no remount of the view, no raw sockets, even as root inside the user namespace.
  bool drop_capabilities = true;
  // With a user namespace: no nested user or mount namespaces (their max_*_namespaces set to 0),
  // which would hand back every capability (unshare -Urm, then mount a tmpfs of any size).
  bool nested_namespaces = false;
  // no_new_privs always; these rlimits (data_bytes is overridden by memory_bytes, below).
  ProcessLimits limits;
  // The memory ceiling, 0 for none: a cgroup v2 memory.max where kagent can make one
  // (memory_cgroup.hpp), else RLIMIT_DATA per process. With an IPC namespace, its SysV shared
  // memory is bounded by the same number (shmmax, shmall).
  std::uint64_t memory_bytes = 0;
  // With a pid namespace and Linux 6.14+: at most so many live processes, root too (pid_limit.hpp).
  int max_processes = 0;
  EnvPolicy environment;
  std::string working_directory;  // empty: "/" with a view, else kagent's own
};

// The kernel refused the namespaces (clone failed): the caller decides its fallback.
class JailRefused : public EnvError {
 public:
  using EnvError::EnvError;
};

// How the memory ceiling of a jail is held, for records and messages.
struct MemoryCeiling {
  std::uint64_t bytes = 0;
  std::string how;  // "cgroup memory.max", "RLIMIT_DATA" or "none"
  std::string why;  // why no cgroup, when RLIMIT_DATA
};

// Starts request.argv under `spec` with the request's stdin/stdout/stderr (-1: /dev/null; stderr
// -1: as stdout) and request.extra_env on top of the spec's environment. argv[0] is looked up in
// kagent's PATH and must be visible in the view. Throws JailRefused when the kernel refuses the
// namespaces, EnvError for anything else kagent itself cannot do (no program, no init).
pid_t spawn_jailed(const JailSpec& spec, const SpawnRequest& request, MemoryCeiling* ceiling = nullptr);

// The jail's init, kagent-jail-init: beside kagent, else in the build tree. Empty when missing.
std::string jail_init_path();

}  // namespace kagent::sandbox
