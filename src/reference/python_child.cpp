#include "kagent/reference/python_child.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <cstdlib>
#include <filesystem>

#include "kagent/common/error.hpp"
#include "kagent/sandbox/jail.hpp"
#include "kagent/sandbox/policy.hpp"
#include "kagent/sandbox/process.hpp"
#include "kagent/sandbox/python_paths.hpp"
#include "kagent/sandbox/system_view.hpp"

namespace kagent {

namespace {

namespace fs = std::filesystem;

sandbox::JailSpec jail_for(const PythonChild& c) {
  sandbox::JailSpec spec;
  spec.name = c.name;
  sandbox::FilesystemView& v = spec.view;
  for (const auto& p : sandbox::system_read_only_paths()) v.add_read_only(p);
  for (const auto& p : sandbox::python_install_paths()) v.add_read_only(p);  // no home directory itself
  v.add_tmpfs("/tmp", fmt::format("mode=1777,size={}", kPythonChildTmpBytes));
  v.add_tmpfs("/var/tmp", fmt::format("mode=1777,size={}", 64 << 20));
  v.add_tmpfs("/run", fmt::format("mode=755,size={}", 1 << 20));
  sandbox::add_private_dev(v, c.gpu, kPythonChildShmBytes);
  v.add_proc("/proc", /*process_files_writable=*/true);  // CUDA writes its process's /proc files
  // The child's own files after the scratch file systems, which would hide them (a problem file or
  // a cache folder under the host's /tmp).
  for (const auto& p : c.read_only) v.add_read_only(fs::absolute(p).string());
  for (const auto& p : c.writable) v.add_writable(fs::absolute(p).string());
  v.protect_host_mounts(c.writable.empty() ? std::string() : fs::absolute(c.writable.front()).string());
  v.finish("/tmp");
  spec.environment = sandbox::runner_environment();
  spec.max_processes = kPythonChildMaxProcesses;
  // No memory ceiling by number: RLIMIT_DATA, the fallback where no cgroup can be made, would also
  // bound what CUDA and a 6.4 GB problem legitimately take; a child that exhausts the machine's
  // memory is the OOM killer's first choice instead.
  spec.limits.oom_score_adj = 1000;
  spec.working_directory = c.writable.empty() ? "/" : fs::absolute(c.writable.front()).string();
  return spec;
}

// Without namespaces: kagent-sandbox-exec gives a network namespace and Landlock write confinement.
pid_t fallback(const PythonChild& c, const sandbox::SpawnRequest& rq, const std::string& why, std::string* warning) {
  const fs::path exec = (c.exec_dir.empty() ? fs::path(self_dir()) : fs::path(c.exec_dir)) / "kagent-sandbox-exec";
  sandbox::SpawnRequest r = rq;
  sandbox::SandboxPolicy policy = sandbox::runner_policy();
  policy.name = c.name;
  policy.network_namespace = false;  // entered by kagent-sandbox-exec
  std::error_code ec;
  std::string weaker;
  if (fs::exists(exec, ec)) {
    r.argv = {exec.string()};
    for (const auto& w : c.writable) r.argv.insert(r.argv.end(), {"--write", fs::absolute(w).string()});
    r.argv.push_back("--");
    r.argv.insert(r.argv.end(), rq.argv.begin(), rq.argv.end());
    weaker = "it can read this user's files";
  } else {
    weaker =
        fmt::format("it can read and write this user's files and reach the network ({} is missing)", exec.string());
  }
  if (warning) *warning = fmt::format("the {} runs without its namespaces ({}): {}", c.name, why, weaker);
  return sandbox::spawn(policy, r);
}

}  // namespace

std::function<pid_t(const sandbox::SpawnRequest&, std::string*)> python_child_launcher(PythonChild child) {
  return [child = std::move(child)](const sandbox::SpawnRequest& rq, std::string* warning) -> pid_t {
    try {
      sandbox::MemoryCeiling ceiling;
      // The interpreter itself: "python3" in PATH may be a launcher outside the view (pyenv's shim).
      sandbox::SpawnRequest jailed = rq;
      if (!jailed.argv.empty() && fs::path(jailed.argv[0]).filename().string().starts_with("python") &&
          !sandbox::python_executable().empty())
        jailed.argv[0] = sandbox::python_executable();
      // The program itself is visible wherever it is (a python3 outside the system directories).
      PythonChild with_program = child;
      if (!jailed.argv.empty()) {
        const std::string exe = find_in_path(jailed.argv[0]);
        if (!exe.empty()) with_program.read_only.push_back(exe);
      }
      pid_t pid = sandbox::spawn_jailed(jail_for(with_program), jailed, &ceiling);
      spdlog::debug("{}: pid {} in its jail, memory ceiling {} ({})", child.name, pid, ceiling.bytes, ceiling.how);
      return pid;
    } catch (const sandbox::JailRefused& e) {
      return fallback(child, rq, e.what(), warning);
    }
  };
}

}  // namespace kagent
