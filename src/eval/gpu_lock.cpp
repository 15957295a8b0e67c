#include "kagent/eval/gpu_lock.hpp"

#include <atomic>
#include <cctype>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "kagent/common/error.hpp"

namespace kagent {

GpuLock::GpuLock(const std::filesystem::path& path, const std::function<void()>& on_wait) {
  try {
    lock_.emplace(path, on_wait);
  } catch (const EnvError& e) {
    // A measurement without the lock is still a measurement: said once, and the work goes on.
    static std::atomic<bool> said{false};
    if (!said.exchange(true)) spdlog::warn("{}: measurements are not serialized with other kagent processes", e.what());
  }
}

std::filesystem::path gpu_lock_path(const std::filesystem::path& cache_dir, const std::string& gpu_uuid, int gpu) {
  std::string id;
  for (char c : gpu_uuid)  // a UUID is [0-9a-f-]; anything else stays out of the file name
    if (std::isalnum(static_cast<unsigned char>(c)) || c == '-') id += c;
  if (id.empty()) id = fmt::format("index{}", gpu);
  return cache_dir / "locks" / fmt::format("gpu-{}.lock", id);
}

}  // namespace kagent
