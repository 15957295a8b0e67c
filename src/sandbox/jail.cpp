#include "kagent/sandbox/jail.hpp"

#include <fcntl.h>
#include <linux/sched.h>
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <mutex>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "jail_start.hpp"
#include "kagent/sandbox/pid_limit.hpp"
#include "kagent/sandbox/process.hpp"

#ifndef KAGENT_JAIL_INIT_DEFAULT
#define KAGENT_JAIL_INIT_DEFAULT ""
#endif

namespace kagent::sandbox {

namespace {

constexpr const char* kInitName = "kagent-jail-init";

// argv/envp for execve, built before clone (the child may not allocate).
struct CStrings {
  explicit CStrings(std::vector<std::string> strings) : owned(std::move(strings)) {
    for (auto& s : owned) ptrs.push_back(s.data());
    ptrs.push_back(nullptr);
  }
  std::vector<std::string> owned;
  std::vector<char*> ptrs;
};

// The init, copied once into a sealed memfd: executed from there, pid 1's /proc/1/exe reads
// "/memfd:jail-init (deleted)" instead of a host path, and the view need not hold the binary
// (it is linked statically, so no loader or library is needed inside either).
int init_memfd(std::string* why) {
  static std::mutex mutex;
  static int fd = -1;
  std::lock_guard<std::mutex> lock(mutex);
  if (fd >= 0) return fd;
  std::string path = jail_init_path();
  if (path.empty()) {
    *why = fmt::format("{} is missing (it is built beside kagent; looked beside {} and in {})", kInitName, self_dir(),
                       KAGENT_JAIL_INIT_DEFAULT);
    return -1;
  }
  int src = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  struct stat st {};
  if (src < 0 || fstat(src, &st) != 0) {
    *why = fmt::format("cannot open {}: {}", path, std::strerror(errno));
    if (src >= 0) close(src);
    return -1;
  }
  int mem = memfd_create("jail-init", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  off_t off = 0;
  bool copied = mem >= 0;
  while (copied && off < st.st_size) copied = sendfile(mem, src, &off, static_cast<size_t>(st.st_size - off)) > 0;
  int err = errno;
  close(src);
  if (!copied) {
    if (mem >= 0) close(mem);
    *why = fmt::format("cannot copy {} into memory: {}", path, std::strerror(err));
    return -1;
  }
  fcntl(mem, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL);
  fd = mem;
  return fd;
}

struct Plan {
  const char* name = "";
  JailNamespaces ns;
  FilesystemView view;
  bool drop_caps = true;
  bool nested = false;
  ProcessLimits limits;
  int cap_last = 63;
  std::string uid_map, gid_map, pid_max, shmmax, shmall, cwd, exe;
  pid_t parent = 0;
  int in = -1, out = -1, err = -1, report = -1, init = -1;
  std::vector<int> keep;
};

[[noreturn]] void fail(const Plan& p, const char* step, const char* path = nullptr) {
  report_setup_failure(p.name, step, path, errno, p.report);
  _exit(kSetupFailedExit);
}

// The child, from clone to exec: raw system calls only (kagent is multi-threaded).
[[noreturn]] void jail_child(Plan& p, char* const* argv, char* const* init_argv, char* const* envp) {
  if (dup2(p.in, 0) < 0 || dup2(p.out, 1) < 0 || dup2(p.err, 2) < 0) fail(p, "standard descriptors");
  close_all_except(p.keep);
  reset_signals();
  // Own process group, death with kagent, no_new_privs, rlimits.
  if (!apply_child_limits(p.limits)) fail(p, "process limits");
  // kagent died before PR_SET_PDEATHSIG took effect (in a pid namespace getppid() is 0).
  if (!p.ns.pid && getppid() != p.parent) _exit(kSetupFailedExit);
  if (p.ns.user && !write_id_maps(p.uid_map.c_str(), p.gid_map.c_str()))
    fail(p, "write the id maps", "/proc/self/uid_map");
  if (p.ns.user && !p.nested) {
    if (!write_proc_file("/proc/sys/user/max_user_namespaces", "0"))
      fail(p, "forbid nested namespaces", "/proc/sys/user/max_user_namespaces");
    if (!write_proc_file("/proc/sys/user/max_mnt_namespaces", "0"))
      fail(p, "forbid nested namespaces", "/proc/sys/user/max_mnt_namespaces");
  }
  if (p.ns.pid && !p.pid_max.empty() && !limit_pid_namespace(p.pid_max.c_str()))
    fail(p, "limit the pid namespace", "/proc/sys/kernel/pid_max");
  if (p.ns.ipc && !p.shmmax.empty()) {
    if (!write_proc_file("/proc/sys/kernel/shmmax", p.shmmax))
      fail(p, "limit SysV shared memory", "/proc/sys/kernel/shmmax");
    if (!write_proc_file("/proc/sys/kernel/shmall", p.shmall))
      fail(p, "limit SysV shared memory", "/proc/sys/kernel/shmall");
  }
  const char* where = nullptr;
  if (p.ns.mount)
    if (const char* step = p.view.enter(&where)) fail(p, step, where);
  if (!p.cwd.empty() && chdir(p.cwd.c_str()) != 0) fail(p, "chdir", p.cwd.c_str());
  if (p.drop_caps && !drop_all_capabilities(p.cap_last)) fail(p, "drop capabilities");
  if (p.init >= 0) {
    // The init keeps the report descriptor (it sends the program's status there) and closes it
    // for the program.
    if (p.report >= 0 && fcntl(p.report, F_SETFD, 0) != 0) fail(p, "pass the report descriptor");
    syscall(SYS_execveat, p.init, "", init_argv, envp, AT_EMPTY_PATH);
    fail(p, "execute the jail's init", kInitName);
  }
  execve(p.exe.c_str(), argv, envp);
  report_setup_failure(p.name, "execute", p.exe.c_str(), errno, p.report);
  _exit(kExecFailedExit);
}

pid_t clone_into(unsigned long flags, int cgroup_fd) {
  if (cgroup_fd >= 0) {
    clone_args args{};
    args.flags = flags | CLONE_INTO_CGROUP;
    args.exit_signal = SIGCHLD;
    args.cgroup = static_cast<__u64>(cgroup_fd);
    return static_cast<pid_t>(syscall(SYS_clone3, &args, sizeof args));
  }
  // glibc's fork() runs atfork handlers and takes locks another thread may have held at clone
  // time; the raw system call does neither (and takes namespace flags).
  return static_cast<pid_t>(syscall(SYS_clone, flags | SIGCHLD, nullptr, nullptr, nullptr, nullptr));
}

std::string namespace_list(const JailNamespaces& ns) {
  std::vector<std::string> names;
  if (ns.user) names.emplace_back("user");
  if (ns.mount) names.emplace_back("mount");
  if (ns.network) names.emplace_back("network");
  if (ns.ipc) names.emplace_back("IPC");
  if (ns.pid) names.emplace_back("pid");
  return names.empty() ? "no" : fmt::format("{}", fmt::join(names, ", "));
}

}  // namespace

std::string jail_init_path() {
  for (const std::string& p : {self_dir() + "/" + kInitName, std::string(KAGENT_JAIL_INIT_DEFAULT)})
    if (!p.empty() && access(p.c_str(), X_OK) == 0) return p;
  return "";
}

JailStart start_jail(const JailSpec& spec, const SpawnRequest& request, int report_fd) {
  JailStart started;
  if (request.argv.empty()) throw EnvError(fmt::format("{}: nothing to start", spec.name));
  Plan p;
  p.name = spec.name.c_str();
  p.ns = spec.namespaces;
  p.exe = request.argv[0].find('/') == std::string::npos ? find_in_path(request.argv[0]) : request.argv[0];
  if (p.exe.empty() || access(p.exe.c_str(), X_OK) != 0)
    throw EnvError(fmt::format("{}: '{}' not found or not executable", spec.name, request.argv[0]));
  if (p.ns.pid) {
    std::string why;
    p.init = init_memfd(&why);
    if (p.init < 0) throw EnvError(fmt::format("{}: {}", spec.name, why));
  }
  p.view = spec.view;
  p.drop_caps = spec.drop_capabilities;
  p.nested = spec.nested_namespaces;
  p.limits = spec.limits;
  p.cap_last = capability_last();
  p.cwd = !spec.working_directory.empty() ? spec.working_directory : p.ns.mount ? "/" : "";
  p.parent = getpid();
  IdMaps maps = identity_id_maps();
  p.uid_map = std::move(maps.uid_map);
  p.gid_map = std::move(maps.gid_map);
  if (p.ns.pid && spec.max_processes > 0 && pid_limit_support().per_namespace)
    p.pid_max = pid_max_text(spec.max_processes);

  started.memory.bytes = spec.memory_bytes;
  started.memory.how = "none";
  if (spec.memory_bytes > 0) {
    started.cgroup = MemoryCgroup::create(spec.memory_bytes, &started.memory.why);
    if (started.cgroup) {
      started.memory.how = "cgroup memory.max";
    } else {
      started.memory.how = "RLIMIT_DATA";
      p.limits.data_bytes = std::min<rlim_t>(p.limits.data_bytes, spec.memory_bytes);
    }
    if (p.ns.ipc) {
      p.shmmax = std::to_string(spec.memory_bytes);
      p.shmall = std::to_string(spec.memory_bytes / static_cast<std::uint64_t>(sysconf(_SC_PAGESIZE)));
    }
  }

  int devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
  p.in = above_stdio(request.stdin_fd >= 0 ? request.stdin_fd : devnull);
  p.out = above_stdio(request.stdout_fd >= 0 ? request.stdout_fd : devnull);
  p.err = above_stdio(request.stderr_fd >= 0 ? request.stderr_fd : p.out);
  p.report = above_stdio(report_fd);
  p.keep = {0, 1, 2};
  for (int fd : {p.report, p.init})
    if (fd >= 0) p.keep.push_back(fd);
  std::sort(p.keep.begin(), p.keep.end());
  auto close_ours = [&] {
    for (int fd : {devnull, p.in, p.out, p.err, p.report})
      if (fd >= 0) close(fd);
  };
  if (p.in < 0 || p.out < 0 || p.err < 0 || (report_fd >= 0 && p.report < 0)) {
    int e = errno;
    close_ours();
    throw EnvError(fmt::format("{}: cannot prepare the child's descriptors: {}", spec.name, std::strerror(e)));
  }

  std::vector<std::string> args = request.argv;
  args[0] = p.exe;
  std::vector<std::string> init_args = {"jail-init", "--report-fd", std::to_string(p.report), "--"};
  init_args.insert(init_args.end(), args.begin(), args.end());
  EnvPolicy env = spec.environment;
  env.set.insert(env.set.end(), request.extra_env.begin(), request.extra_env.end());
  CStrings argv(args), init_argv(init_args), envp(child_environment(env));

  unsigned long flags = 0;
  if (p.ns.user) flags |= CLONE_NEWUSER;
  if (p.ns.mount) flags |= CLONE_NEWNS;
  if (p.ns.network) flags |= CLONE_NEWNET;
  if (p.ns.ipc) flags |= CLONE_NEWIPC;
  if (p.ns.pid) flags |= CLONE_NEWPID;
  pid_t pid = clone_into(flags, started.cgroup ? started.cgroup->fd() : -1);
  if (pid < 0 && started.cgroup && (errno == ENOSYS || errno == E2BIG || errno == EINVAL)) {
    // A kernel before 5.7 (no CLONE_INTO_CGROUP): RLIMIT_DATA instead.
    started.memory.why = fmt::format("clone3 into a cgroup: {}", std::strerror(errno));
    started.memory.how = "RLIMIT_DATA";
    started.cgroup.reset();
    p.limits.data_bytes = std::min<rlim_t>(p.limits.data_bytes, spec.memory_bytes);
    pid = clone_into(flags, -1);
  }
  if (pid == 0) jail_child(p, argv.ptrs.data(), init_argv.ptrs.data(), envp.ptrs.data());
  int clone_errno = errno;
  close_ours();
  if (pid < 0) {
    std::string what =
        fmt::format("{}: clone with {} namespaces: {}", spec.name, namespace_list(p.ns), std::strerror(clone_errno));
    if (clone_errno == EPERM || clone_errno == EINVAL || clone_errno == ENOSPC || clone_errno == EUSERS ||
        clone_errno == EACCES)
      throw JailRefused(what + " (the kernel refuses these namespaces here)");
    throw EnvError(what);
  }
  // Also from this side, so that a kill(-pid) right after clone cannot miss the child.
  setpgid(pid, pid);
  started.pid = pid;
  return started;
}

pid_t spawn_jailed(const JailSpec& spec, const SpawnRequest& request, MemoryCeiling* ceiling) {
  JailStart s = start_jail(spec, request, -1);
  if (ceiling != nullptr) *ceiling = s.memory;
  keep_until_empty(std::move(s.cgroup));
  return s.pid;
}

}  // namespace kagent::sandbox
