#include "kagent/tools/shell_tool.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <system_error>
#include <vector>

#include <fmt/format.h>

#include "kagent/common/process.hpp"
#include "kagent/eval/sandbox.hpp"

extern char** environ;

namespace fs = std::filesystem;
using nlohmann::json;

namespace kagent::tools {

namespace {

using Clock = std::chrono::steady_clock;

constexpr const char* kNamespaces = "namespaces";
constexpr const char* kBubblewrap = "bubblewrap";
constexpr int kSetupFailedExit = 125;
// Device nodes the sandbox's own /dev offers; GPU nodes (/dev/nvidia*) are added when present.
constexpr const char* kDevNodes[] = {"null", "zero", "full", "random", "urandom", "tty"};

// ---- what the child needs, built before it exists --------------------------------------------
//
// The tool runs in a multi-threaded program, so between clone and exec only async-signal-safe
// calls are allowed: no allocation, no locks, no stdio. Everything the child reads (paths, id
// maps, argv, environment) is prepared here, and the child uses raw system calls only.

struct MountPoint {
  std::string path;
  unsigned long flags = 0;  // MS_NOSUID/MS_NODEV/MS_NOEXEC now in force: a user namespace must keep them
};

struct DevNode {
  std::string source;  // /dev/null on the host
  bool is_dir = false;
};

struct ChildPlan {
  std::string ws;
  unsigned long ws_flags = 0;
  std::vector<std::string> ws_prefixes;  // "/tmp", "/tmp/a", ...: mount points made inside fresh tmpfs
  std::vector<MountPoint> read_only;     // every mount outside the workspace
  std::vector<std::string> masks;        // fresh tmpfs here (/tmp, /run): host sockets and files hidden
  std::vector<DevNode> dev;              // bound into a fresh /dev (no disks, no /dev/mem)
  std::vector<int> dev_fds;              // filled by the child (preallocated: it may not allocate)
  std::string uid_map, gid_map;
  int cap_last = 63;
  std::string exe;  // bash, or bwrap
  std::vector<std::string> args, env;
  std::vector<char*> argv, envp;
  std::vector<int> keep_fds;  // sorted: what the child keeps of the parent's descriptors
  int out_w = -1, report_w = -1, devnull = -1;
};

// Sent from the child over a pipe. The pointers point into the plan or at string literals: the
// child's memory is a copy of the parent's, so they are valid in the parent too.
struct ChildReport {
  const char* step = nullptr;  // a setup step that failed, or null
  const char* path = nullptr;
  int err = 0;
  int status = 0;  // bash's wait status, when step is null
};

std::string unescape_mountinfo(const std::string& s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    auto octal = [&](size_t k) { return k < s.size() && s[k] >= '0' && s[k] <= '7'; };
    if (s[i] == '\\' && octal(i + 1) && octal(i + 2) && octal(i + 3)) {  // "\040" is a space
      out += static_cast<char>((s[i + 1] - '0') * 64 + (s[i + 2] - '0') * 8 + (s[i + 3] - '0'));
      i += 3;
    } else {
      out += s[i];
    }
  }
  return out;
}

bool is_within(const std::string& path, const std::string& dir) {
  if (dir == "/") return true;
  return path == dir || (path.size() > dir.size() && path.compare(0, dir.size(), dir) == 0 && path[dir.size()] == '/');
}

unsigned long locked_flags(const std::string& path, bool* ok) {
  struct statvfs st {};
  *ok = statvfs(path.c_str(), &st) == 0;
  unsigned long flags = 0;
  if (st.f_flag & ST_NOSUID) flags |= MS_NOSUID;
  if (st.f_flag & ST_NODEV) flags |= MS_NODEV;
  if (st.f_flag & ST_NOEXEC) flags |= MS_NOEXEC;
  return flags;
}

// Every mount point outside the workspace, from /proc/self/mountinfo (field 5), with its flags.
// One statvfs per path gives the flags of the topmost mount there, the one a remount changes.
// Paths we cannot even stat are unreachable for the sandboxed shell too and are left out.
std::vector<MountPoint> mounts_outside(const std::string& ws) {
  std::ifstream in("/proc/self/mountinfo");
  std::vector<MountPoint> out;
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::string id, parent, dev, root, point;
    if (!(fields >> id >> parent >> dev >> root >> point)) continue;
    point = unescape_mountinfo(point);
    if (is_within(point, ws)) continue;
    if (std::any_of(out.begin(), out.end(), [&](const MountPoint& m) { return m.path == point; })) continue;
    bool ok = false;
    unsigned long flags = locked_flags(point, &ok);
    if (ok) out.push_back({point, flags});
  }
  return out;
}

bool is_real_dir(const char* path) {
  struct stat st {};
  return lstat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

std::vector<DevNode> dev_nodes() {
  std::vector<DevNode> out;
  auto add = [&](const std::string& name) {
    struct stat st {};
    std::string path = "/dev/" + name;
    if (lstat(path.c_str(), &st) == 0 && (S_ISCHR(st.st_mode) || S_ISDIR(st.st_mode)))
      out.push_back({path, S_ISDIR(st.st_mode)});
  };
  for (const char* name : kDevNodes) add(name);
  // The GPU, for programs the model builds and runs (nvidia0, nvidiactl, nvidia-uvm, nvidia-caps/).
  if (DIR* d = opendir("/dev")) {
    while (dirent* e = readdir(d))
      if (std::strncmp(e->d_name, "nvidia", 6) == 0) add(e->d_name);
    closedir(d);
  }
  return out;
}

int read_cap_last() {
  std::ifstream in("/proc/sys/kernel/cap_last_cap");
  int n = 63;
  in >> n;
  return n;
}

// The shell's environment: no API keys or anything else of kagent's own; HOME and TMPDIR in the
// workspace (the only writable place); the CUDA/NVIDIA variables a GPU program needs.
std::vector<std::string> shell_environment(const fs::path& ws) {
  std::vector<std::string> env;
  const char* path = std::getenv("PATH");
  env.push_back(std::string("PATH=") + (path != nullptr ? path : "/usr/local/bin:/usr/bin:/bin"));
  if (const char* ld = std::getenv("LD_LIBRARY_PATH")) env.push_back(std::string("LD_LIBRARY_PATH=") + ld);
  env.push_back("HOME=" + ws.string());
  env.push_back("TMPDIR=" + (ws / ".tmp").string());
  env.push_back("LANG=C.UTF-8");
  for (char** e = environ; *e != nullptr; ++e) {
    std::string_view var = *e;
    if (var.substr(0, 5) == "CUDA_" || var.substr(0, 7) == "NVIDIA_") env.emplace_back(var);
  }
  return env;
}

void finish_plan(ChildPlan& plan) {
  for (auto& a : plan.args) plan.argv.push_back(a.data());
  plan.argv.push_back(nullptr);
  for (auto& e : plan.env) plan.envp.push_back(e.data());
  plan.envp.push_back(nullptr);
  plan.dev_fds.assign(plan.dev.size(), -1);
}

// ---- the child: raw system calls only ----------------------------------------------------------

[[noreturn]] void child_fail(const ChildPlan& plan, const char* step, const char* path = nullptr) {
  ChildReport r;
  r.step = step;
  r.path = path;
  r.err = errno;
  [[maybe_unused]] ssize_t n = write(plan.report_w, &r, sizeof r);
  _exit(kSetupFailedExit);
}

// "/proc/self/fd/N" without snprintf (not async-signal-safe).
void fd_path(char (&buf)[32], int fd) {
  const char prefix[] = "/proc/self/fd/";
  char digits[12];
  int n = 0;
  do {
    digits[n++] = static_cast<char>('0' + fd % 10);
    fd /= 10;
  } while (fd > 0 && n < 11);
  size_t i = 0;
  for (; prefix[i] != '\0'; ++i) buf[i] = prefix[i];
  while (n > 0) buf[i++] = digits[--n];
  buf[i] = '\0';
}

// Closes every descriptor the parent process had open (other threads' sockets and pipes),
// except the sorted `keep`.
void close_all_except(const std::vector<int>& keep) {
  unsigned int from = 0;
  for (int fd : keep) {
    if (static_cast<unsigned int>(fd) > from) syscall(SYS_close_range, from, static_cast<unsigned int>(fd) - 1, 0);
    from = static_cast<unsigned int>(fd) + 1;
  }
  syscall(SYS_close_range, from, ~0U, 0);
}

// Signals back to default and unblocked: kagent's handlers, and an ignored SIGPIPE (which exec
// would pass on and which would change how pipelines like `yes | head` end), are not the shell's.
void reset_signals() {
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  for (int sig = 1; sig < NSIG; ++sig) sigaction(sig, &dfl, nullptr);
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
}

pid_t raw_fork(unsigned long flags) {
  // glibc's fork() runs atfork handlers and takes locks another thread may have held at clone
  // time; the raw system call does neither (and takes namespace flags).
  return static_cast<pid_t>(syscall(SYS_clone, flags | SIGCHLD, nullptr, nullptr, nullptr, nullptr));
}

[[noreturn]] void exec_shell(const ChildPlan& plan) {
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (dup2(plan.devnull, 0) < 0 || dup2(plan.out_w, 1) < 0 || dup2(plan.out_w, 2) < 0) child_fail(plan, "dup2");
  execve(plan.exe.c_str(), plan.argv.data(), plan.envp.data());
  child_fail(plan, "exec", plan.exe.c_str());
}

// Mounts this mount namespace's view: everything read-only, fresh tmpfs over /tmp and /run, a
// small /dev, the workspace writable.
void setup_mounts(ChildPlan& plan) {
  // Nothing done here may propagate back to the host's mounts.
  if (mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) child_fail(plan, "make mounts private");
  // Opened before the masks and the new /dev hide them; bound from /proc/self/fd/N below.
  int ws_fd = open(plan.ws.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (ws_fd < 0) child_fail(plan, "open the workspace", plan.ws.c_str());
  for (size_t i = 0; i < plan.dev.size(); ++i) plan.dev_fds[i] = open(plan.dev[i].source.c_str(), O_PATH | O_CLOEXEC);

  for (const auto& m : plan.read_only) {
    if (mount(nullptr, m.path.c_str(), nullptr, MS_REMOUNT | MS_BIND | MS_RDONLY | m.flags, nullptr) == 0) continue;
    // Gone, hidden under another mount, or not reachable by us: the shell cannot get there either.
    if (errno == ENOENT || errno == EACCES || errno == ENOTDIR || errno == EINVAL) continue;
    child_fail(plan, "remount read-only", m.path.c_str());
  }
  for (const auto& m : plan.masks) {
    const char* mode = m == "/tmp" ? "mode=1777" : "mode=755";
    if (mount("tmpfs", m.c_str(), "tmpfs", MS_NOSUID | MS_NODEV, mode) != 0) child_fail(plan, "mount tmpfs", m.c_str());
  }

  if (mount("tmpfs", "/dev", "tmpfs", MS_NOSUID | MS_NOEXEC, "mode=755") != 0) child_fail(plan, "mount tmpfs", "/dev");
  char src[32];
  for (size_t i = 0; i < plan.dev.size(); ++i) {
    if (plan.dev_fds[i] < 0) continue;
    const char* target = plan.dev[i].source.c_str();
    if (plan.dev[i].is_dir) {
      mkdir(target, 0755);
    } else {
      int fd = open(target, O_WRONLY | O_CREAT | O_CLOEXEC, 0666);
      if (fd >= 0) close(fd);
    }
    fd_path(src, plan.dev_fds[i]);
    if (mount(src, target, nullptr, MS_BIND | MS_REC, nullptr) != 0) child_fail(plan, "bind device", target);
    close(plan.dev_fds[i]);
  }
  if (symlink("/proc/self/fd", "/dev/fd") != 0 || symlink("/proc/self/fd/0", "/dev/stdin") != 0 ||
      symlink("/proc/self/fd/1", "/dev/stdout") != 0 || symlink("/proc/self/fd/2", "/dev/stderr") != 0)
    child_fail(plan, "symlink", "/dev/fd");
  if (mkdir("/dev/shm", 01777) != 0 || mount("tmpfs", "/dev/shm", "tmpfs", MS_NOSUID | MS_NODEV, "mode=1777") != 0)
    child_fail(plan, "mount tmpfs", "/dev/shm");

  // The workspace last: a bind of it is the one writable place. Its mount point may have to be
  // made first, when a tmpfs above hides it (a workspace in /tmp).
  for (const auto& p : plan.ws_prefixes) mkdir(p.c_str(), 0755);
  fd_path(src, ws_fd);
  if (mount(src, plan.ws.c_str(), nullptr, MS_BIND | MS_REC, nullptr) != 0)
    child_fail(plan, "bind the workspace", plan.ws.c_str());
  // The bind copied the read-only flag of the mount it came from; clear it on this mount only.
  if (mount(nullptr, plan.ws.c_str(), nullptr, MS_REMOUNT | MS_BIND | plan.ws_flags, nullptr) != 0)
    child_fail(plan, "make the workspace writable", plan.ws.c_str());
  close(ws_fd);
  // Our own /proc, read-only, showing only the sandbox's processes. Not possible everywhere (a
  // container's /proc with masked paths refuses it); the host's, remounted read-only, then stays.
  mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC | MS_RDONLY, nullptr);
}

// The first process of the sandbox: pid 1 of its own pid namespace, in its own user, mount and
// network namespaces. It sets them up, starts bash, reports bash's status and exits, which
// kills whatever bash left running (a pid namespace ends with its first process).
[[noreturn]] void sandbox_init(ChildPlan& plan) {
  close_all_except(plan.keep_fds);
  reset_signals();
  if (!apply_child_limits()) child_fail(plan, "process limits");
  // setgroups "deny" must precede gid_map for an unprivileged writer; older kernels lack the file.
  if (!write_proc_file("/proc/self/setgroups", "deny") && errno != ENOENT) child_fail(plan, "setgroups deny");
  if (!write_proc_file("/proc/self/uid_map", plan.uid_map)) child_fail(plan, "write uid_map");
  if (!write_proc_file("/proc/self/gid_map", plan.gid_map)) child_fail(plan, "write gid_map");
  setup_mounts(plan);
  if (chdir(plan.ws.c_str()) != 0) child_fail(plan, "chdir", plan.ws.c_str());
  // No capabilities for bash: with them (root in this user namespace) it could remount / rw.
  for (int cap = 0; cap <= plan.cap_last; ++cap)
    if (prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0 && errno != EINVAL) child_fail(plan, "drop capabilities");

  pid_t bash = raw_fork(0);
  if (bash < 0) child_fail(plan, "fork");
  if (bash == 0) exec_shell(plan);
  close(plan.out_w);  // EOF for the parent once bash and its children are gone
  int status = 0;
  for (;;) {
    pid_t w = waitpid(-1, &status, 0);  // also reaps orphans reparented to us
    if (w == bash) break;
    if (w < 0 && errno != EINTR) _exit(kSetupFailedExit);
  }
  ChildReport r;
  r.status = status;
  [[maybe_unused]] ssize_t n = write(plan.report_w, &r, sizeof r);
  _exit(0);
}

// bwrap does its own namespace setup (and sets no_new_privs itself: set here, it would keep a
// setuid bwrap from working), so this child only takes its own process group and executes it.
[[noreturn]] void bubblewrap_child(const ChildPlan& plan) {
  reset_signals();
  if (setpgid(0, 0) != 0 || prctl(PR_SET_PDEATHSIG, SIGKILL) != 0) child_fail(plan, "process group");
  syscall(SYS_close_range, 3U, ~0U, 4U /* CLOSE_RANGE_CLOEXEC */);
  exec_shell(plan);
}

// ---- the parent ------------------------------------------------------------------------------

// Keeps the head and tail of output whose middle may be far larger than anything the model will
// read (`yes` for a minute): past 2 * limit bytes the middle is discarded as it arrives.
class OutputBuffer {
 public:
  explicit OutputBuffer(size_t limit) : limit_(limit) {}
  void append(const char* data, size_t n) {
    text_.append(data, n);
    total_ += n;
    if (text_.size() > 2 * limit_) {
      size_t keep = limit_ / 2;
      text_.erase(keep, text_.size() - 2 * keep);
    }
  }
  const std::string& text() const { return text_; }
  size_t total() const { return total_; }
  bool discarded() const { return total_ > text_.size(); }

 private:
  size_t limit_;
  std::string text_;
  size_t total_ = 0;
};

struct SandboxRun {
  std::string setup_error;  // the sandbox could not run the command: why
  bool timed_out = false;
  int exit_code = -1;
  int signal = 0;
  double seconds = 0;
};

class Fd {
 public:
  explicit Fd(int fd = -1) : fd_(fd) {}
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() { reset(); }
  int get() const { return fd_; }
  void reset() {
    if (fd_ >= 0) close(fd_);
    fd_ = -1;
  }

 private:
  int fd_;
};

// The child's descriptors must not be 0, 1 or 2 (kagent may run with closed stdio): dup2 onto
// themselves would keep FD_CLOEXEC, and one could overwrite another.
int above_stdio(int fd) {
  if (fd < 0 || fd > 2) return fd;
  int moved = fcntl(fd, F_DUPFD_CLOEXEC, 3);
  close(fd);
  return moved;
}

SandboxRun run_sandboxed(const std::string& method, const fs::path& ws, const std::string& command,
                         std::chrono::seconds timeout, OutputBuffer& output) {
  SandboxRun run;
  const auto start = Clock::now();
  const std::string root = ws.string();
  std::string bash = find_in_path("bash");
  if (bash.empty()) {
    run.setup_error = "bash is not in PATH";
    return run;
  }
  std::error_code ec;
  fs::create_directories(ws / ".tmp", ec);  // TMPDIR

  ChildPlan plan;
  plan.ws = root;
  plan.env = shell_environment(ws);
  bool namespaces = method == kNamespaces;
  if (namespaces) {
    bool ok = false;
    plan.ws_flags = locked_flags(root, &ok);
    if (!ok) {
      run.setup_error = fmt::format("statvfs {}: {}", root, std::strerror(errno));
      return run;
    }
    for (size_t i = root.find('/', 1); i != std::string::npos; i = root.find('/', i + 1))
      plan.ws_prefixes.push_back(root.substr(0, i));
    plan.ws_prefixes.push_back(root);
    plan.read_only = mounts_outside(root);
    for (const char* m : {"/tmp", "/run", "/var/run"})
      if (is_real_dir(m)) plan.masks.emplace_back(m);
    plan.dev = dev_nodes();
    plan.uid_map = fmt::format("{} {} 1", getuid(), getuid());
    plan.gid_map = fmt::format("{} {} 1", getgid(), getgid());
    plan.cap_last = read_cap_last();
    plan.exe = bash;
    plan.args = {"bash", "-c", command};
  } else {
    plan.exe = find_in_path("bwrap");
    if (plan.exe.empty()) {
      run.setup_error = "bwrap is not in PATH";
      return run;
    }
    plan.args = {"bwrap", "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp"};
    if (is_real_dir("/run")) plan.args.insert(plan.args.end(), {"--tmpfs", "/run"});
    plan.args.insert(plan.args.end(), {"--bind", root, root, "--unshare-net", "--unshare-pid", "--die-with-parent",
                                       "--cap-drop", "ALL", "--chdir", root, "--", bash, "-c", command});
  }
  finish_plan(plan);

  int out[2], report[2];
  if (pipe2(out, O_CLOEXEC) != 0) {
    run.setup_error = fmt::format("pipe: {}", std::strerror(errno));
    return run;
  }
  Fd out_r(out[0]), out_w(above_stdio(out[1]));
  if (pipe2(report, O_CLOEXEC) != 0) {
    run.setup_error = fmt::format("pipe: {}", std::strerror(errno));
    return run;
  }
  Fd report_r(report[0]), report_w(above_stdio(report[1]));
  Fd devnull(above_stdio(open("/dev/null", O_RDONLY | O_CLOEXEC)));
  if (out_w.get() < 0 || report_w.get() < 0 || devnull.get() < 0) {
    run.setup_error = fmt::format("pipe or /dev/null: {}", std::strerror(errno));
    return run;
  }
  plan.out_w = out_w.get();
  plan.report_w = report_w.get();
  plan.devnull = devnull.get();
  plan.keep_fds = {plan.out_w, plan.report_w, plan.devnull};
  std::sort(plan.keep_fds.begin(), plan.keep_fds.end());

  pid_t pid = namespaces ? raw_fork(CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWNET | CLONE_NEWPID) : fork();
  if (pid == 0) {
    if (namespaces) sandbox_init(plan);
    bubblewrap_child(plan);
  }
  if (pid < 0) {
    run.setup_error = fmt::format("clone{}: {}", namespaces ? " (new user, mount, network and pid namespaces)" : "",
                                  std::strerror(errno));
    return run;
  }
  setpgid(pid, pid);  // also done by the child; whichever runs first, kill(-pid) reaches both
  out_w.reset();
  report_w.reset();

  // Output until EOF (every process in the sandbox gone) or the deadline; after a kill, a short
  // while more for what was written before it.
  auto deadline = start + timeout;
  char buf[65536];
  for (;;) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) {
      if (run.timed_out) break;
      run.timed_out = true;
      kill(-pid, SIGKILL);
      kill(pid, SIGKILL);
      deadline = Clock::now() + std::chrono::seconds(1);
      continue;
    }
    pollfd pfd{out_r.get(), POLLIN, 0};
    int pr = poll(&pfd, 1, static_cast<int>(std::min<int64_t>(left, INT_MAX)));
    if (pr < 0 && errno != EINTR) break;  // the wait below still keeps the deadline
    if (pr <= 0) continue;
    ssize_t n = read(out_r.get(), buf, sizeof buf);
    if (n > 0) {
      output.append(buf, static_cast<size_t>(n));
    } else if (n == 0 || errno != EINTR) {
      break;
    }
  }
  // EOF comes once every process in the sandbox is gone (both methods use a pid namespace);
  // the first process ends just after, having written its report.
  int status = 0;
  for (;;) {
    pid_t w = waitpid(pid, &status, WNOHANG);
    if (w == pid || (w < 0 && errno != EINTR)) break;
    if (Clock::now() >= deadline && !run.timed_out) {
      run.timed_out = true;
      kill(-pid, SIGKILL);
      kill(pid, SIGKILL);
    }
    usleep(1000);
  }
  run.seconds = std::chrono::duration<double>(Clock::now() - start).count();

  ChildReport r;
  bool reported = false;
  while (read(report_r.get(), &r, sizeof r) == static_cast<ssize_t>(sizeof r)) {
    if (r.step != nullptr) {
      run.setup_error = fmt::format("{}{}{}: {}", r.step, r.path != nullptr ? " " : "", r.path != nullptr ? r.path : "",
                                    std::strerror(r.err));
      return run;
    }
    status = r.status;
    reported = true;
  }
  if (!reported && namespaces && !run.timed_out) {
    run.setup_error = fmt::format("the sandbox's first process ended without a report (wait status {})", status);
    return run;
  }
  if (WIFEXITED(status)) run.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) run.signal = WTERMSIG(status);
  return run;
}

// ---- the tool --------------------------------------------------------------------------------

class ShellTool : public Tool {
 public:
  ShellTool(const Workspace& ws, ShellSandbox sandbox, ShellOptions options)
      : ws_(ws), sandbox_(std::move(sandbox)), options_(options) {}

  llm::ToolSpec spec() const override {
    llm::ToolSpec s;
    s.name = "shell";
    s.description = fmt::format(
        "Run a bash command in the workspace (the current directory; HOME and TMPDIR are in it too). "
        "Sandboxed: no network, and only the workspace is writable (everything else is read-only; /tmp "
        "is a private scratch space that is discarded). stdin is empty; stdout and stderr are merged. "
        "The command is killed, with everything it started, after timeout_s seconds (default {}, at most {}); "
        "background processes end when the command does. Output beyond {} bytes is cut in the middle. "
        "The result starts with the exit status.",
        options_.default_timeout.count(), options_.max_timeout.count(), options_.output_cap);
    s.parameters = {
        {"type", "object"},
        {"properties",
         {{"command", {{"type", "string"}, {"description", "bash command line, run with bash -c"}}},
          {"timeout_s",
           {{"type", "integer"},
            {"minimum", 1},
            {"maximum", options_.max_timeout.count()},
            {"description", fmt::format("time limit in seconds (default {})", options_.default_timeout.count())}}}}},
        {"required", {"command"}}};
    return s;
  }

  ToolResult run(const json& args) override {
    std::string command = arg_string(args, "command");
    if (command.find('\0') != std::string::npos) throw ToolError("argument 'command' contains a NUL character");
    auto timeout_arg = arg_int(args, "timeout_s", 1, options_.max_timeout.count());
    std::chrono::seconds timeout = timeout_arg ? std::chrono::seconds(*timeout_arg) : options_.default_timeout;
    if (auto left = time_left()) timeout = std::min(timeout, std::chrono::ceil<std::chrono::seconds>(*left));

    OutputBuffer output(std::max<size_t>(options_.output_cap * 4, size_t{1} << 20));
    SandboxRun r = run_sandboxed(sandbox_.method, ws_.root(), command, timeout, output);
    ToolResult result;
    result.record = {{"sandbox", sandbox_.method}, {"timed_out", r.timed_out}, {"exit_code", r.exit_code},
                     {"signal", r.signal},         {"seconds", r.seconds},     {"output_bytes", output.total()}};
    if (!r.setup_error.empty()) {
      result.is_error = true;
      result.text = fmt::format("the command did not run: the {} sandbox failed: {}", sandbox_.method, r.setup_error);
      result.record["error"] = r.setup_error;
      return result;
    }
    // A failing command is an ordinary result (the model reads the status); so is a timeout.
    if (r.timed_out) {
      result.text = fmt::format("killed after {} s (timeout)", timeout.count());
    } else if (r.signal != 0) {
      result.text = fmt::format("killed by signal {}", r.signal);
    } else {
      result.text = fmt::format("exit {}", r.exit_code);
    }
    if (output.discarded())
      result.text += fmt::format("\n[{} bytes of output in all; the middle is left out]", output.total());
    if (output.total() == 0) {
      result.text += " (no output)";
    } else {
      result.text += '\n';
      result.text += cut_middle(output.text(), options_.output_cap);
    }
    return result;
  }

 private:
  Workspace ws_;
  ShellSandbox sandbox_;
  ShellOptions options_;
};

// Runs a tiny command with `method`; empty when the sandbox does what it must: the command runs,
// the workspace is writable, "/" is not, and a write next to the workspace never reaches the host.
std::string probe_method(const std::string& method, const fs::path& dir) {
  Workspace ws(dir / "ws");
  OutputBuffer output(4096);
  SandboxRun r =
      run_sandboxed(method, ws.root(), "test -w / && exit 3; echo x > ../outside 2>/dev/null; echo ok > inside",
                    std::chrono::seconds(20), output);
  if (!r.setup_error.empty()) return r.setup_error;
  std::string said = output.text().substr(0, 200);
  if (r.timed_out) return "the probe command timed out";
  if (r.exit_code == 3) return "/ is writable inside the sandbox";
  if (r.exit_code != 0)
    return fmt::format("the probe command failed (exit {}, signal {}): {}", r.exit_code, r.signal, said);
  if (fs::exists(dir / "outside")) return "a write outside the workspace reached the host";
  if (!fs::exists(ws.root() / "inside")) return "the workspace is not writable inside the sandbox";
  return "";
}

ShellSandbox probe_uncached() {
  ShellSandbox result;
  std::string tmpl = (fs::temp_directory_path() / "kagent-shell-probe-XXXXXX").string();
  if (mkdtemp(tmpl.data()) == nullptr) {
    result.reason = fmt::format("cannot make a probe directory {}: {}", tmpl, std::strerror(errno));
    return result;
  }
  fs::path dir = tmpl;
  std::string why = probe_method(kNamespaces, dir);
  if (why.empty()) {
    result.method = kNamespaces;
  } else if (find_in_path("bwrap").empty()) {
    result.reason = fmt::format("Linux namespaces failed ({}) and bubblewrap (bwrap) is not installed", why);
  } else {
    std::string why_bwrap = probe_method(kBubblewrap, dir);
    if (why_bwrap.empty()) {
      result.method = kBubblewrap;
    } else {
      result.reason = fmt::format("Linux namespaces failed ({}); bubblewrap failed ({})", why, why_bwrap);
    }
  }
  result.available = result.reason.empty();
  std::error_code ec;
  fs::remove_all(dir, ec);
  return result;
}

}  // namespace

ShellSandbox probe_shell_sandbox() {
  static const ShellSandbox probed = probe_uncached();
  return probed;
}

std::unique_ptr<Tool> make_shell_tool(const Workspace& ws, const ShellSandbox& sandbox, ShellOptions options) {
  if (!sandbox.available) return nullptr;
  return std::make_unique<ShellTool>(ws, sandbox, options);
}

}  // namespace kagent::tools
