#include "kagent/model_tools/shell_tool.hpp"

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <system_error>
#include <vector>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "kagent/sandbox/capture.hpp"
#include "kagent/sandbox/environment.hpp"
#include "kagent/sandbox/filesystem_view.hpp"
#include "kagent/sandbox/jail.hpp"
#include "kagent/sandbox/pid_limit.hpp"
#include "kagent/sandbox/policy.hpp"
#include "kagent/sandbox/process.hpp"
#include "kagent/sandbox/system_view.hpp"

namespace fs = std::filesystem;
using nlohmann::json;

namespace kagent::model_tools {

namespace {

constexpr const char* kNamespaces = "namespaces";
constexpr const char* kBubblewrap = "bubblewrap";
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

// The host paths the model's shell sees, read-only; docs/sandbox.md lists them.
// No home directory (/root, /home, kagent's $HOME) is ever a root of the view: the shell's PATH
// leaves them out too (sandbox::shell_environment).
std::vector<std::string> shell_read_only_paths(const std::string& ws) {
  // System directories, part of /etc, the CUDA toolkit (sandbox/system_view.hpp).
  std::vector<std::string> out = sandbox::system_read_only_paths();
  // The programs on kagent's PATH (a virtualenv's python3 with its torch, a conda install).
  if (const char* path = std::getenv("PATH")) {
    std::istringstream dirs(sandbox::without_home_directories(path));
    std::string dir;
    while (std::getline(dirs, dir, ':'))
      if (!dir.empty() && dir[0] == '/' && !sandbox::is_within(dir, ws)) out.push_back(path_entry_root(dir));
  }
  std::erase_if(out, [](const std::string& p) { return sandbox::in_home_directory(p); });
  return out;
}

std::string tmpfs_options(const char* mode, std::uint64_t bytes) {
  return fmt::format("mode={},size={}", mode, bytes);
}

sandbox::FilesystemView shell_view(const std::string& ws, const ShellOptions& o) {
  sandbox::FilesystemView v;
  // Every host mount read-only before the binds (a recursive bind of /sys carries its submounts).
  v.protect_host_mounts(ws);
  for (const auto& p : shell_read_only_paths(ws)) v.add_read_only(p);
  // Private scratch space, each of a bounded size: the host's /tmp, /run (and its sockets) are
  // not there.
  v.add_tmpfs("/tmp", tmpfs_options("1777", o.tmp_bytes));
  v.add_tmpfs("/var/tmp", tmpfs_options("1777", o.tmp_bytes));
  v.add_tmpfs("/run", tmpfs_options("755", 16 << 20));
  // A small /dev: no disks, no /dev/mem; the GPU's nodes for programs the model builds and runs.
  sandbox::add_private_dev(v, /*gpu=*/true, o.shm_bytes);
  // Our own /proc, showing only the sandbox's processes (never kagent's, whose environment holds
  // the API key).
  v.add_proc("/proc", /*process_files_writable=*/true);  // CUDA programs write their own /proc files
  // The workspace last: a bind of it is the one writable place.
  v.add_writable(ws);
  v.finish("/tmp");
  return v;
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

// "4 GiB", "512 MiB", "1500 bytes".
std::string human_bytes(std::uint64_t n) {
  if (n >= (std::uint64_t{1} << 30) && n % (std::uint64_t{1} << 30) == 0) return fmt::format("{} GiB", n >> 30);
  if (n >= (std::uint64_t{1} << 30)) return fmt::format("{:.1f} GiB", static_cast<double>(n) / (1 << 30));
  if (n >= (std::uint64_t{1} << 20)) return fmt::format("{} MiB", n >> 20);
  if (n >= (std::uint64_t{1} << 10)) return fmt::format("{} KiB", n >> 10);
  return fmt::format("{} bytes", n);
}

// The disk blocks the workspace takes (a sparse file counts what it holds), over at most
// `entries` files.
std::uint64_t workspace_usage(const fs::path& root, size_t entries = 1000000) {
  std::uint64_t total = 0;
  std::error_code ec;
  for (fs::recursive_directory_iterator it(root, fs::directory_options::skip_permission_denied, ec), end;
       !ec && it != end && entries > 0; it.increment(ec), --entries) {
    struct stat st {};
    if (lstat(it->path().c_str(), &st) == 0) total += static_cast<std::uint64_t>(st.st_blocks) * 512;
  }
  return total;
}

sandbox::CaptureResult run_sandboxed(const std::string& method, const fs::path& ws, const std::string& command,
                                     std::chrono::seconds timeout, const ShellOptions& o, OutputBuffer& output) {
  sandbox::CaptureResult run;
  const std::string root = ws.string();
  std::string bash = find_in_path("bash");
  if (bash.empty()) {
    run.setup_error = "bash is not in PATH";
    return run;
  }
  std::error_code ec;
  fs::create_directories(ws / ".tmp", ec);  // TMPDIR
  const sandbox::SandboxPolicy policy = sandbox::shell_policy(root);
  auto sink = [&](const char* data, size_t n) { output.append(data, n); };
  try {
    if (method == kNamespaces) {
      sandbox::JailSpec spec;
      spec.name = policy.name;
      spec.view = shell_view(root, o);  // finished
      spec.limits = policy.limits;
      spec.limits.file_bytes = o.file_bytes;
      spec.limits.oom_score_adj = 1000;  // the model's commands go first when the machine runs out
      spec.memory_bytes = o.memory_bytes;
      spec.max_processes = policy.max_processes;
      spec.environment = *policy.environment;
      spec.working_directory = root;
      return sandbox::run_jailed(spec, {{bash, "-c", command}, {}, -1, -1, -1}, timeout, sink);
    }
    std::string bwrap = find_in_path("bwrap");
    if (bwrap.empty()) {
      run.setup_error = "bwrap is not in PATH";
      return run;
    }
    // bwrap makes its own namespaces (and sets no_new_privs itself: set here, it would keep a
    // setuid bwrap from working), so it is started as a plain child with the shell's environment.
    std::vector<std::string> args = {bwrap};
    for (const auto& p : shell_read_only_paths(root)) args.insert(args.end(), {"--ro-bind-try", p, p});
    args.insert(args.end(), {"--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp", "--tmpfs", "/run"});
    args.insert(args.end(), {"--bind", root, root, "--unshare-net", "--unshare-ipc", "--unshare-pid",
                             "--die-with-parent", "--cap-drop", "ALL", "--chdir", root, "--", bash, "-c", command});
    sandbox::SandboxPolicy plain = policy;
    plain.restricted = false;
    return sandbox::run_spawned(plain, {args, {}, -1, -1, -1}, timeout, sink);
  } catch (const std::exception& e) {
    run.setup_error = e.what();
    return run;
  }
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
        "space that is discarded; there are no home directories); at most 1024 processes. Limits: memory {} "
        "for the whole command, {} per file written, /tmp {} and /dev/shm {}, the workspace {}; the result "
        "says which limit a command hit. stdin is empty; stdout and stderr are merged. "
        "The command is killed, with everything it started, after timeout_s seconds (default {}, at most {}); "
        "background processes end when the command does. Output beyond {} bytes is cut in the middle. "
        "The result starts with the exit status.",
        human_bytes(options_.memory_bytes), human_bytes(options_.file_bytes), human_bytes(options_.tmp_bytes),
        human_bytes(options_.shm_bytes), human_bytes(options_.workspace_bytes), options_.default_timeout.count(),
        options_.max_timeout.count(), options_.output_cap);
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
    sandbox::CaptureResult r = run_sandboxed(sandbox_.method, ws_.root(), command, timeout, options_, output);
    ToolResult result;
    result.record = {{"sandbox", sandbox_.method},
                     {"process_limit", sandbox_.process_limit},
                     {"memory_limit", memory_record(r.memory)},
                     {"timed_out", r.timed_out},
                     {"exit_code", r.exit_code},
                     {"signal", r.signal},
                     {"out_of_memory", r.out_of_memory},
                     {"seconds", r.seconds},
                     {"output_bytes", output.total()}};
    if (!r.setup_error.empty()) {
      result.is_error = true;
      result.text = fmt::format("the command did not run: the {} sandbox failed: {}", sandbox_.method, r.setup_error);
      result.record["error"] = r.setup_error;
      return result;
    }
    // A failing command is an ordinary result (the model reads the status); so is a timeout.
    result.text = status_line(r, timeout);
    for (const std::string& note : limit_notes(r, output.text())) result.text += "\n[" + note + "]";
    const std::uint64_t used = workspace_usage(ws_.root());
    result.record["workspace_bytes"] = used;
    if (used > options_.workspace_bytes)
      result.text += fmt::format(
          "\n[the workspace holds {}, past its limit of {}: delete files you no longer need (build trees, "
          "large outputs)]",
          human_bytes(used), human_bytes(options_.workspace_bytes));
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
  std::string memory_limit() const {
    return fmt::format("the shell's limit is {}", human_bytes(options_.memory_bytes));
  }

  // The first line: how the command ended, naming the ceiling that ended it.
  std::string status_line(const sandbox::CaptureResult& r, std::chrono::seconds timeout) const {
    if (r.timed_out) return fmt::format("killed after {} s (timeout)", timeout.count());
    if (r.signal == SIGKILL && r.out_of_memory) return fmt::format("killed: out of memory ({})", memory_limit());
    if (r.signal == SIGXFSZ)
      return fmt::format("killed by signal {} (SIGXFSZ): file size limit, {} per file", r.signal,
                         human_bytes(options_.file_bytes));
    if (r.signal != 0) return fmt::format("killed by signal {}", r.signal);
    return fmt::format("exit {}", r.exit_code);
  }

  // What a command that ran into a ceiling further down (a process it started) is told.
  std::vector<std::string> limit_notes(const sandbox::CaptureResult& r, const std::string& out) const {
    std::vector<std::string> notes;
    if (r.timed_out) return notes;
    if (r.out_of_memory && !(r.signal == SIGKILL))
      notes.push_back(fmt::format("a process was killed: out of memory ({})", memory_limit()));
    if (r.exit_code == 128 + SIGXFSZ || out.find("File size limit exceeded") != std::string::npos)
      notes.push_back(fmt::format("a process was killed by SIGXFSZ: file size limit, {} per file",
                                  human_bytes(options_.file_bytes)));
    const bool failed = r.exit_code != 0 || r.signal != 0;
    if (failed && r.memory.how == "RLIMIT_DATA") {
      for (const char* marker :
           {"Cannot allocate memory", "cannot allocate", "MemoryError", "bad_alloc", "out of memory"})
        if (out.find(marker) != std::string::npos) {
          notes.push_back(
              fmt::format("an allocation failed: out of memory ({}, RLIMIT_DATA per process)", memory_limit()));
          break;
        }
    }
    if (failed && out.find("No space left on device") != std::string::npos)
      notes.push_back(fmt::format(
          "no space left: /tmp and /var/tmp hold {} each, /dev/shm {}; the workspace's limit is {}",
          human_bytes(options_.tmp_bytes), human_bytes(options_.shm_bytes), human_bytes(options_.workspace_bytes)));
    return notes;
  }

  static std::string memory_record(const sandbox::MemoryCeiling& m) {
    if (m.how == "none" || m.how.empty()) return "none";
    std::string s = fmt::format("{} {}", m.how, human_bytes(m.bytes));
    if (!m.why.empty()) s += fmt::format(" (no cgroup: {})", m.why);
    return s;
  }

  Workspace ws_;
  ShellSandbox sandbox_;
  ShellOptions options_;
};

// Runs a tiny command with `method`; empty when the sandbox does what it must: the command runs,
// the workspace is writable, "/" is not, and a write next to the workspace never reaches the host.
std::string probe_method(const std::string& method, const fs::path& dir) {
  Workspace ws(dir / "ws");
  OutputBuffer output(4096);
  sandbox::CaptureResult r =
      run_sandboxed(method, ws.root(), "test -w / && exit 3; echo x > ../outside 2>/dev/null; echo ok > inside",
                    std::chrono::seconds(20), ShellOptions{}, output);
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

}  // namespace kagent::model_tools
