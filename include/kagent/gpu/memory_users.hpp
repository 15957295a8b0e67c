#pragma once
// Which processes hold memory on a GPU, from NVML (libnvidia-ml.so.1, installed with the driver and
// loaded with dlopen). An out-of-memory error in an evaluation is the candidate's only when nothing
// else held the GPU's memory: with another process on the GPU, the verdict would depend on what else
// runs there (an environment error instead, which bench retries).
#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace kagent {

struct GpuMemoryUser {
  pid_t pid = 0;       // as the host's pid namespace numbers it
  uint64_t bytes = 0;  // NVML's usedGpuMemory; 0 where NVML cannot say (it then reports "not available")
};

// The compute processes on the GPU with this UUID ("GPU-..."), or nullopt with *why set when NVML
// is missing or refuses (a container without the library, a GPU it does not know).
std::optional<std::vector<GpuMemoryUser>> gpu_memory_users(const std::string& uuid, std::string* why = nullptr);

// True when `pid` is one of `roots` or descends from one (parent links in /proc).
bool descends_from(pid_t pid, const std::vector<pid_t>& roots);

struct MemoryContention {
  uint64_t others_bytes = 0;  // held by processes outside `ours`
  std::vector<pid_t> others;  // their pids
  std::string note;           // set when NVML could not answer: why
};
// The memory other processes than `ours` (and their descendants) hold on the GPU `uuid`.
MemoryContention memory_contention(const std::string& uuid, const std::vector<pid_t>& ours);

}  // namespace kagent
