#include "kagent/sandbox/environment.hpp"

#include <algorithm>
#include <array>
#include <cstdlib>
#include <string>

extern char** environ;

namespace kagent::sandbox {

namespace {

constexpr std::array<std::string_view, 2> kProfilerVariables = {"LD_PRELOAD", "CUDA_INJECTION64_PATH"};
constexpr std::array<std::string_view, 4> kProfilerPrefixes = {"NV_", "NSYS_", "NCU_", "NVTX_"};

bool is_profiler_variable(std::string_view name) {
  for (auto v : kProfilerVariables)
    if (name == v) return true;
  for (auto p : kProfilerPrefixes)
    if (name.starts_with(p)) return true;
  return false;
}

bool at_or_below(std::string_view path, std::string_view dir) {
  while (dir.size() > 1 && dir.back() == '/') dir.remove_suffix(1);
  return path == dir || (path.size() > dir.size() && path.starts_with(dir) && path[dir.size()] == '/');
}

}  // namespace

bool in_home_directory(std::string_view path) {
  if (at_or_below(path, "/root") || at_or_below(path, "/home")) return true;
  const char* home = std::getenv("HOME");
  std::string_view h = home != nullptr ? home : "";
  return h.size() > 1 && h[0] == '/' && at_or_below(path, h);
}

std::string without_home_directories(std::string_view list, std::string_view fallback) {
  std::string out;
  size_t start = 0;
  while (start <= list.size()) {
    size_t end = std::min(list.find(':', start), list.size());
    std::string_view dir = list.substr(start, end - start);
    if (!dir.empty() && dir[0] == '/' && !in_home_directory(dir)) {
      if (!out.empty()) out += ':';
      out += dir;
    }
    start = end + 1;
  }
  return out.empty() ? std::string(fallback) : out;
}

std::string_view variable_name(std::string_view assignment) {
  return assignment.substr(0, assignment.find('='));
}

std::vector<std::string> child_environment(const EnvPolicy& policy) {
  std::vector<std::string> env;
  bool has_path = false;
  for (const auto& name : policy.names) {
    if (const char* value = std::getenv(name.c_str()); value != nullptr) {
      env.push_back(name + "=" + value);
      has_path = has_path || name == "PATH";
    }
  }
  for (char** e = environ; *e != nullptr; ++e) {
    std::string_view name = variable_name(*e);
    bool named = std::find(policy.names.begin(), policy.names.end(), name) != policy.names.end();
    if (named) continue;  // already taken, in the policy's order
    bool by_prefix = std::any_of(policy.prefixes.begin(), policy.prefixes.end(),
                                 [&](const std::string& p) { return name.starts_with(p); });
    if (by_prefix || (policy.profiler_variables && is_profiler_variable(name))) env.emplace_back(*e);
  }
  if (!has_path) env.push_back("PATH=/usr/local/bin:/usr/bin:/bin");
  // Set values win over kept ones of the same name (getenv would return the first duplicate).
  for (const auto& s : policy.set) {
    auto same = [&](const std::string& kept) { return variable_name(kept) == variable_name(s); };
    env.erase(std::remove_if(env.begin(), env.end(), same), env.end());
    env.push_back(s);
  }
  return env;
}

EnvPolicy runner_environment() {
  EnvPolicy p;
  p.names = {"PATH", "LD_LIBRARY_PATH", "CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER", "CUDA_MODULE_LOADING",
             "NVIDIA_VISIBLE_DEVICES", "NVIDIA_DRIVER_CAPABILITIES", "TMPDIR", "KAGENT_CACHE_DIR", "XDG_CACHE_HOME",
             "HOME", "SPDLOG_LEVEL", "KAGENT_RUNNER_NETNS",
             // Where the runner finds cuDNN and cuBLASLt for library steps (toolkit_library.hpp).
             "CUDA_HOME", "KAGENT_LIBRARY_PATH", "VIRTUAL_ENV", "CONDA_PREFIX"};
  p.profiler_variables = true;
  p.set = {"LANG=C"};  // stable, parseable messages from the driver and tools
  return p;
}

EnvPolicy shell_environment(const std::string& workspace) {
  EnvPolicy p;
  p.prefixes = {"CUDA_", "NVIDIA_"};
  // The view has no home directories: a PATH entry there (a pyenv in /root/.pyenv) would name a
  // directory that is not there, and docs/sandbox.md promises the shell none of them.
  const char* path = std::getenv("PATH");
  p.set = {"PATH=" + without_home_directories(path != nullptr ? path : "")};
  if (const char* ld = std::getenv("LD_LIBRARY_PATH"); ld != nullptr && *ld != '\0') {
    std::string kept = without_home_directories(ld, "");
    if (!kept.empty()) p.set.push_back("LD_LIBRARY_PATH=" + kept);
  }
  p.set.insert(p.set.end(), {"HOME=" + workspace, "TMPDIR=" + workspace + "/.tmp", "LANG=C.UTF-8"});
  return p;
}

EnvPolicy compile_worker_environment() {
  EnvPolicy p;
  p.names = {"PATH", "LD_LIBRARY_PATH", "SPDLOG_LEVEL"};
  p.set = {"LANG=C"};
  return p;
}

}  // namespace kagent::sandbox
