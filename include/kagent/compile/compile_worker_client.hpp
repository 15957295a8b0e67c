#pragma once
// Runs NVRTC in kagent-compile (src/compile_worker): a process of its own under the compile-worker
// sandbox policy, seeing only the toolkit's headers. The source travels on stdin, so no host path
// is needed; the cubin and log come back on stdout.
#include <chrono>
#include <string>
#include <vector>

namespace kagent {

struct WorkerCompile {
  std::string name;  // the program name NVRTC uses in its messages
  std::string source;
  std::vector<std::string> options;
  std::vector<std::string> visible;  // host directories the worker may read (the toolkit's headers)
};

struct WorkerResult {
  int nvrtc_result = -1;  // an nvrtcResult; -1 when the worker itself failed
  std::string error;      // nvrtcGetErrorString, or what went wrong with the worker
  std::string log;
  std::string cubin;
  std::string isolation;  // "namespaces" or "process"
  std::string warning;    // set when the weaker "process" isolation was all that worked
};

// The worker executable: $KAGENT_COMPILE_WORKER, else kagent-compile beside this executable,
// else the build tree's.
std::string compile_worker_path();

// Throws EnvError when the worker cannot be started or does not answer within `timeout`.
WorkerResult run_compile_worker(const WorkerCompile& request, std::chrono::seconds timeout = std::chrono::seconds(300));

}  // namespace kagent
