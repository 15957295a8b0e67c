// kagent-sandbox-exec: the sandbox of a Python child that cannot set one up itself before it
// imports torch (the ModelNew worker, src/eval/modelnew_worker.cpp, which builds untrusted CUDA
// with load_inline and Triton). kagent spawns it under the worker's SandboxPolicy (environment
// allowlist, rlimits, no_new_privs); it then, still single-threaded:
//   1. enters its own network namespace (sandbox::enter_network_namespace, as kagent-runner
//      does), unless --no-netns or a CUDA tool is attached (cuda_tool_attached);
//   2. confines file-system writes with Landlock (sandbox::restrict_writes) to the --write
//      directories, /dev (GPU nodes, /dev/null, /dev/shm are opened read-write) and /proc/self;
//      reading and executing stay allowed everywhere, and the rules bind every process it starts;
//   3. executes PROGRAM (looked up in PATH) with the same environment.
// A missing namespace or Landlock is a warning on stderr ("kagent-sandbox-exec: warning: ...",
// which kagent passes on) and the program still runs, unless --require-landlock (exit 3).
// Exit 2: bad usage or a --write directory that does not exist; 127: PROGRAM could not be run.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "kagent/common/error.hpp"
#include "kagent/sandbox/landlock.hpp"
#include "kagent/sandbox/network.hpp"

namespace {

constexpr const char* kUsage =
    "usage: kagent-sandbox-exec --write DIR [--write DIR2 ...] [--no-netns] [--require-landlock] -- PROGRAM "
    "ARGS...\n";

struct Options {
  std::vector<std::string> writable;
  bool netns = true;
  bool require_landlock = false;
  std::vector<char*> program;  // PROGRAM ARGS..., null-terminated for execvp
};

void warn(const std::string& line) {
  fmt::print(stderr, "kagent-sandbox-exec: warning: {}\n", line);
}

[[noreturn]] void usage_error(const std::string& what) {
  fmt::print(stderr, "kagent-sandbox-exec: {}\n{}", what, kUsage);
  std::exit(2);
}

Options parse(int argc, char** argv) {
  Options o;
  int i = 1;
  for (; i < argc; ++i) {
    std::string_view arg = argv[i];
    if (arg == "--") break;
    if (arg == "--write") {
      if (i + 1 >= argc) usage_error("--write needs a directory");
      o.writable.emplace_back(argv[++i]);
    } else if (arg == "--no-netns") {
      o.netns = false;
    } else if (arg == "--require-landlock") {
      o.require_landlock = true;
    } else {
      usage_error(fmt::format("unknown argument '{}'", arg));
    }
  }
  if (i >= argc) usage_error("missing '--' before the program");
  if (i + 1 >= argc) usage_error("no program after '--'");
  o.program.assign(argv + i + 1, argv + argc);
  o.program.push_back(nullptr);
  return o;
}

}  // namespace

int main(int argc, char** argv) {
  namespace sandbox = kagent::sandbox;
  Options o = parse(argc, argv);
  std::error_code ec;
  for (const std::string& dir : o.writable)
    if (!std::filesystem::is_directory(dir, ec)) usage_error(fmt::format("--write {}: no such directory", dir));

  if (o.netns) {
    sandbox::NetnsResult ns = sandbox::cuda_tool_attached()
                                  ? sandbox::NetnsResult{false, sandbox::kCudaToolNetnsWarning}
                                  : sandbox::enter_network_namespace();
    if (!ns.warning.empty()) warn(ns.warning);
  }

  // After the namespace: its uid and gid maps are written to /proc/self before writes are confined.
  std::vector<std::string> writable = o.writable;
  writable.emplace_back("/dev");
  if (std::filesystem::is_directory("/proc/self", ec)) writable.emplace_back("/proc/self");
  try {
    sandbox::LandlockResult ll = sandbox::restrict_writes(writable);
    if (!ll.enforced) {
      if (o.require_landlock) {
        fmt::print(stderr, "kagent-sandbox-exec: {} (--require-landlock)\n", ll.warning);
        return 3;
      }
      warn(ll.warning);
    }
  } catch (const kagent::Error& e) {
    fmt::print(stderr, "kagent-sandbox-exec: {}\n", e.what());
    return static_cast<int>(e.code());
  }

  execvp(o.program[0], o.program.data());
  fmt::print(stderr, "kagent-sandbox-exec: cannot run {}: {}\n", o.program[0], std::strerror(errno));
  return 127;
}
