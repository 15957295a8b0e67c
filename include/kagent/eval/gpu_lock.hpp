#pragma once
// One measurement at a time on a GPU. Timing is only true when nothing else runs on the GPU, but
// several evaluators can share one: `bench --jobs 2`, the agent runs of `bench --agent`, a `kagent
// check` beside a `kagent optimize`. Each evaluation's runner request, each baseline measurement and
// each peak measurement holds an exclusive flock(2) on a file named after the GPU's UUID, so they
// queue up across threads and processes; compiling and everything else still runs in parallel.
#include <filesystem>
#include <functional>
#include <optional>
#include <string>

#include "kagent/common/file_lock.hpp"

namespace kagent {

class GpuLock {
 public:
  // Waits for the lock on `path` (the file is created if missing); `on_wait` is called once, before
  // waiting, when another holder has it. A lock file that cannot be opened (a read-only cache) is
  // said once on stderr and the work goes on unlocked.
  explicit GpuLock(const std::filesystem::path& path, const std::function<void()>& on_wait = {});
  bool held() const { return lock_.has_value(); }

 private:
  std::optional<FileLock> lock_;
};

// <cache>/locks/gpu-<uuid>.lock (the index when the UUID is unknown).
std::filesystem::path gpu_lock_path(const std::filesystem::path& cache_dir, const std::string& gpu_uuid, int gpu);

}  // namespace kagent
