#pragma once
// Runs NVRTC in kagent-compile (src/compile_worker): a process of its own under the compile-worker
// sandbox policy, seeing only the toolkit's headers. The source travels on stdin, so no host path
// is needed; the cubin and log come back on stdout.
#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "kagent/sandbox/policy.hpp"

namespace kagent {

// What one compile may use. A compile stopped at a limit is the candidate's failure, not kagent's
// (docs/compilation.md).
struct CompileLimits {
  // Wall clock, kagent's own timer; the same number of seconds is the worker's CPU-time limit.
  std::chrono::seconds seconds{sandbox::kCompileWorkerSeconds};
  uint64_t memory_bytes = sandbox::kCompileWorkerMemoryBytes;  // the worker's address space
};

// The defaults with $KAGENT_COMPILE_TIMEOUT (seconds, 1 to 86400) and $KAGENT_COMPILE_MEMORY (MiB,
// 256 to 1048576) laid over. InputError naming the variable for a value that is not a whole number
// in range.
CompileLimits compile_limits_from_environment();

struct WorkerCompile {
  std::string name;  // the program name NVRTC uses in its messages
  std::string source;
  std::vector<std::string> options;
  std::vector<std::string> visible;  // host directories the worker may read (the toolkit's headers)
  CompileLimits limits;
};

struct WorkerResult {
  int nvrtc_result = -1;  // an nvrtcResult; -1 when the worker itself failed
  std::string error;      // nvrtcGetErrorString, or what went wrong with the worker
  std::string log;
  std::string cubin;
  std::string isolation;  // "namespaces" or "process"
  std::string warning;    // set when the weaker "process" isolation was all that worked
  // Set when the compile did not finish because of the source: stopped at the time or CPU limit,
  // killed by a signal (its memory limit, a crash), or the source refused for its size. Says what
  // happened and the limit; the candidate's failure, like a compile error.
  std::string stopped;
};

// The worker executable: $KAGENT_COMPILE_WORKER, else kagent-compile beside this executable,
// else the build tree's.
std::string compile_worker_path();

// Runs one compile under request.limits. A compile the worker did not finish because of the
// source comes back with `stopped` set. Throws EnvError only when the worker itself cannot run
// (missing or not executable, its sandbox could not be set up, a malformed reply).
WorkerResult run_compile_worker(const WorkerCompile& request);

}  // namespace kagent
