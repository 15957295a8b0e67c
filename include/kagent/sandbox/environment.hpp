#pragma once
// The one environment allowlist for kagent's children. A child gets the variables its policy
// names and nothing else: API keys, tokens and CI secrets stay in kagent.
#include <string>
#include <string_view>
#include <vector>

namespace kagent::sandbox {

struct EnvPolicy {
  std::vector<std::string> names;     // kept when set in kagent's environment
  std::vector<std::string> prefixes;  // every variable starting with one is kept
  // Profilers and checkers (ncu, nsys, compute-sanitizer) inject themselves into CUDA processes
  // through LD_PRELOAD, CUDA_INJECTION64_PATH, NV_*, NSYS_*, NCU_*, NVTX_*; the user runs them
  // around kagent on purpose, so a GPU child (the runner) passes them on.
  bool profiler_variables = false;
  std::vector<std::string> set;  // "NAME=value", added last; they win over kept variables
};

// kagent's environment filtered by `policy`. PATH is always present (a safe default when unset:
// /usr/bin/env must still find python3).
std::vector<std::string> child_environment(const EnvPolicy& policy);

// The name part of "NAME=value".
std::string_view variable_name(std::string_view assignment);

// True for a home directory or a path in one: /root, /home/..., and kagent's own $HOME (unless it
// is "/"). The shell's view holds none of them, so neither its PATH nor its view's roots may.
bool in_home_directory(std::string_view path);
// A PATH-style list without its relative entries and those in a home directory; the default
// "/usr/local/bin:/usr/bin:/bin" when nothing is left.
std::string without_home_directories(std::string_view list, std::string_view fallback = "/usr/local/bin:/usr/bin:/bin");

// The policies of kagent's children, in one place so they can be compared.
// The runner and the reference server: what the CUDA driver and Python need.
EnvPolicy runner_environment();
// The model's shell: PATH and LD_LIBRARY_PATH without home directories, CUDA_* and NVIDIA_*, HOME
// and TMPDIR in `workspace`.
EnvPolicy shell_environment(const std::string& workspace);
// The compile worker: only what the dynamic loader needs.
EnvPolicy compile_worker_environment();

}  // namespace kagent::sandbox
