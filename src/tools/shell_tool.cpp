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
#include <spdlog/spdlog.h>

#include "kagent/sandbox/environment.hpp"
#include "kagent/sandbox/filesystem_view.hpp"
#include "kagent/sandbox/pid_limit.hpp"
#include "kagent/sandbox/policy.hpp"
#include "kagent/sandbox/process.hpp"
#include "kagent/sandbox/process_setup.hpp"

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
// The host directories a job needs: system binaries and libraries (Python and PyTorch installed
// system-wide or in /opt live here too) and /sys (the CUDA driver and nvidia-smi read it).
constexpr const char* kSystemDirs[] = {"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/opt", "/sys"};
// Of /etc only what programs need to start (the loader's cache, user and group names, the
// alternatives links that name python3 and friends): no shadow, no keys, no credentials.
constexpr const char* kEtcEntries[] = {"ld.so.cache", "ld.so.conf",     "ld.so.conf.d", "alternatives", "passwd",
                                       "group",       "nsswitch.conf",  "localtime",    "timezone",     "hosts",
                                       "host.conf",   "bash.bashrc",    "profile",      "inputrc",      "terminfo",
                                       "os-release",  "debian_version", "mime.types",   "python3",      "matplotlibrc"};

// ---- what the child needs, built before it exists --------------------------------------------
//
// The tool runs in a multi-threaded program, so between clone and exec only async-signal-safe
// calls are allowed: no allocation, no locks, no stdio. Everything the child reads (the view,
// id maps, argv, environment) is prepared here, and the child uses raw system calls only.

struct ChildPlan {
  std::string ws;
  std::vector<std::string> read_only;  // every host mount: remounted read-only before the view binds them
  std::vector<unsigned long> read_only_flags;
  sandbox::FilesystemView view;
  std::string uid_map, gid_map;
  std::string pid_max;  // the pid namespace's pid_max; empty: no such limit here
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

unsigned long locked_flags(const std::string& path, bool* ok) {
  struct statvfs st {};
  *ok = statvfs(path.c_str(), &st) == 0;
  unsigned long flags = 0;
  if (st.f_flag & ST_NOSUID) flags |= MS_NOSUID;
  if (st.f_flag & ST_NODEV) flags |= MS_NODEV;
  if (st.f_flag & ST_NOEXEC) flags |= MS_NOEXEC;
  return flags;
}

// Every host mount point outside the workspace, from /proc/self/mountinfo (field 5), with its
// flags: remounted read-only in the sandbox's mount namespace, so that the view's recursive binds
// carry no writable submount. Paths we cannot even stat are unreachable and left out.
void mounts_outside(ChildPlan& plan) {
  std::ifstream in("/proc/self/mountinfo");
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::string id, parent, dev, root, point;
    if (!(fields >> id >> parent >> dev >> root >> point)) continue;
    point = unescape_mountinfo(point);
    if (sandbox::is_within(point, plan.ws)) continue;
    if (std::find(plan.read_only.begin(), plan.read_only.end(), point) != plan.read_only.end()) continue;
    bool ok = false;
    unsigned long flags = locked_flags(point, &ok);
    if (!ok) continue;
    plan.read_only.push_back(point);
    plan.read_only_flags.push_back(flags);
  }
}

int read_cap_last() {
  std::ifstream in("/proc/sys/kernel/cap_last_cap");
  int n = 63;
  in >> n;
  return n;
}

// A PATH directory, or the environment it belongs to (a virtualenv or conda prefix, whose
// site-packages the interpreter in it needs; pyenv's root, whose shims run its libexec and
// versions), for the view.
std::string path_entry_root(const std::string& dir) {
  std::error_code ec;
  fs::path parent = fs::path(dir).parent_path();
  if (fs::exists(parent / "pyvenv.cfg", ec) || fs::exists(parent / "conda-meta", ec) ||
      fs::exists(parent / "libexec" / "pyenv", ec))
    return parent.string();
  return dir;
}

// The host paths the model's shell sees, read-only; README.md ("The shell's view") lists them.
std::vector<std::string> shell_read_only_paths(const std::string& ws) {
  std::vector<std::string> out(std::begin(kSystemDirs), std::end(kSystemDirs));
  for (const char* e : kEtcEntries) out.push_back(std::string("/etc/") + e);
  // The CUDA toolkit kagent uses, wherever it is installed.
  out.push_back(KAGENT_CUDA_HOME_DEFAULT);
  if (const char* home = std::getenv("KAGENT_CUDA_HOME"); home != nullptr && *home == '/') out.push_back(home);
  // The programs on kagent's PATH (a virtualenv's python3 with its torch, a conda install).
  if (const char* path = std::getenv("PATH")) {
    std::istringstream dirs(path);
    std::string dir;
    while (std::getline(dirs, dir, ':'))
      if (!dir.empty() && dir[0] == '/' && !sandbox::is_within(dir, ws)) out.push_back(path_entry_root(dir));
  }
  return out;
}

sandbox::FilesystemView shell_view(const std::string& ws) {
  sandbox::FilesystemView v;
  for (const auto& p : shell_read_only_paths(ws)) v.add_read_only(p);
  // Private scratch space: the host's /tmp, /run (and its sockets) are not there.
  v.add_tmpfs("/tmp", "mode=1777");
  v.add_tmpfs("/var/tmp", "mode=1777");
  v.add_tmpfs("/run", "mode=755");
  // A small /dev: no disks, no /dev/mem; the GPU's nodes for programs the model builds and runs.
  v.add_tmpfs("/dev", "mode=755");
  for (const char* name : kDevNodes) v.add_device(std::string("/dev/") + name);
  if (DIR* d = opendir("/dev")) {
    while (dirent* e = readdir(d))
      if (std::strncmp(e->d_name, "nvidia", 6) == 0) v.add_device(std::string("/dev/") + e->d_name);
    closedir(d);
  }
  v.add_symlink("/dev/fd", "/proc/self/fd");
  v.add_symlink("/dev/stdin", "/proc/self/fd/0");
  v.add_symlink("/dev/stdout", "/proc/self/fd/1");
  v.add_symlink("/dev/stderr", "/proc/self/fd/2");
  v.add_tmpfs("/dev/shm", "mode=1777");
  // Our own /proc, showing only the sandbox's processes (never kagent's, whose environment holds
  // the API key).
  v.add_proc("/proc");
  // The workspace last: a bind of it is the one writable place.
  v.add_writable(ws);
  v.finish("/tmp");
  return v;
}

void finish_plan(ChildPlan& plan) {
  for (auto& a : plan.args) plan.argv.push_back(a.data());
  plan.argv.push_back(nullptr);
  for (auto& e : plan.env) plan.envp.push_back(e.data());
  plan.envp.push_back(nullptr);
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

// The first process of the sandbox: pid 1 of its own pid namespace, in its own user, mount and
// network namespaces. It sets them up, starts bash, reports bash's status and exits, which
// kills whatever bash left running (a pid namespace ends with its first process).
[[noreturn]] void sandbox_init(ChildPlan& plan) {
  sandbox::close_all_except(plan.keep_fds);
  sandbox::reset_signals();
  if (!sandbox::apply_child_limits()) child_fail(plan, "process limits");
  if (!sandbox::write_id_maps(plan.uid_map.c_str(), plan.gid_map.c_str())) child_fail(plan, "write the id maps");
  // At most so many processes in this pid namespace, root or not (a fork bomb stops here).
  if (!plan.pid_max.empty() && !sandbox::limit_pid_namespace(plan.pid_max.c_str()))
    child_fail(plan, "limit the pid namespace", "/proc/sys/kernel/pid_max");
  // Nothing done here may propagate back to the host's mounts.
  if (mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) child_fail(plan, "make mounts private");
  for (size_t i = 0; i < plan.read_only.size(); ++i) {
    const char* m = plan.read_only[i].c_str();
    if (mount(nullptr, m, nullptr, MS_REMOUNT | MS_BIND | MS_RDONLY | plan.read_only_flags[i], nullptr) == 0) continue;
    // Gone, hidden under another mount, or not reachable by us: the shell cannot get there either.
    if (errno == ENOENT || errno == EACCES || errno == ENOTDIR || errno == EINVAL) continue;
    child_fail(plan, "remount read-only", m);
  }
  const char* where = nullptr;
  if (const char* step = plan.view.enter(&where)) child_fail(plan, step, where);
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
  sandbox::reset_signals();
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
  const sandbox::SandboxPolicy policy = sandbox::shell_policy(root);
  plan.env = sandbox::child_environment(*policy.environment);
  bool namespaces = method == kNamespaces;
  if (namespaces) {
    mounts_outside(plan);
    plan.view = shell_view(root);
    plan.uid_map = fmt::format("{} {} 1", getuid(), getuid());
    plan.gid_map = fmt::format("{} {} 1", getgid(), getgid());
    if (sandbox::pid_limit_support().per_namespace) plan.pid_max = sandbox::pid_max_text(policy.max_processes);
    plan.cap_last = read_cap_last();
    plan.exe = bash;
    plan.args = {"bash", "-c", command};
  } else {
    plan.exe = find_in_path("bwrap");
    if (plan.exe.empty()) {
      run.setup_error = "bwrap is not in PATH";
      return run;
    }
    plan.args = {"bwrap"};
    for (const auto& p : shell_read_only_paths(root)) plan.args.insert(plan.args.end(), {"--ro-bind-try", p, p});
    plan.args.insert(plan.args.end(), {"--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp", "--tmpfs", "/run"});
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
        "Sandboxed: no network; it sees the system directories (/usr, /bin, /lib, /opt, /sys, part of /etc), "
        "the CUDA toolkit and the workspace, and only the workspace is writable (/tmp is a private scratch "
        "space that is discarded; there are no home directories); at most 1024 processes. stdin is empty; "
        "stdout and stderr are merged. "
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
    result.record = {{"sandbox", sandbox_.method},
                     {"process_limit", sandbox_.process_limit},
                     {"timed_out", r.timed_out},
                     {"exit_code", r.exit_code},
                     {"signal", r.signal},
                     {"seconds", r.seconds},
                     {"output_bytes", output.total()}};
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
  const int max_processes = sandbox::shell_policy("/").max_processes;
  if (auto pids = sandbox::pid_limit_support(); result.method == kNamespaces && pids.per_namespace) {
    result.process_limit = fmt::format("pid namespace: at most {} processes", max_processes);
  } else {
    result.process_limit = fmt::format("RLIMIT_NPROC only, which does not bind root ({})",
                                       result.method == kNamespaces ? pids.reason : "bubblewrap sets no pid_max");
    if (result.available && getuid() == 0)
      spdlog::warn("shell sandbox: no process limit for root: {}", result.process_limit);
  }
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
