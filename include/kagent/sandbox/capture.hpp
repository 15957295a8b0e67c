#pragma once
// Running a sandboxed command to completion with its output captured (the model's shell): stdin
// empty, stdout and stderr together handed to a sink as they arrive, a wall-clock limit after
// which every process of it is killed, and what ended it.
#include <chrono>
#include <functional>
#include <string>

#include "kagent/sandbox/jail.hpp"
#include "kagent/sandbox/policy.hpp"
#include "kagent/sandbox/spawn.hpp"

namespace kagent::sandbox {

struct CaptureResult {
  // The program never ran: the set-up step that failed, with its path and errno (or the exec
  // failure of the program), as the child reported it.
  std::string setup_error;
  bool timed_out = false;
  int exit_code = -1;  // valid when it exited
  int signal = 0;      // the signal that ended the program, if any
  double seconds = 0;
  bool out_of_memory = false;  // the jail's memory cgroup OOM-killed one of its processes
  MemoryCeiling memory;        // how its memory ceiling was held
};

using OutputSink = std::function<void(const char* data, size_t size)>;

// request.argv under `spec`, its stdin /dev/null and its stdout and stderr to `sink` (the request's
// descriptors are ignored). Ends once every process of the jail is gone, or at `timeout`, when
// all of them are killed. Throws as spawn_jailed (JailRefused when the namespaces are refused).
CaptureResult run_jailed(const JailSpec& spec, const SpawnRequest& request, std::chrono::milliseconds timeout,
                         const OutputSink& sink);

// The same for a program started by sandbox::spawn under `policy` (bubblewrap, which makes its own
// namespaces); a set-up failure there is only the exit status and the line in the output.
CaptureResult run_spawned(const SandboxPolicy& policy, const SpawnRequest& request, std::chrono::milliseconds timeout,
                          const OutputSink& sink);

}  // namespace kagent::sandbox
