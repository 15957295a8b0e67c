#include "kagent/eval/gpu_lock.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <atomic>
#include <cctype>
#include <cerrno>
#include <cstring>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

namespace kagent {

GpuLock::GpuLock(const std::filesystem::path& path, const std::function<void()>& on_wait) {
  std::error_code ec;
  std::filesystem::create_directories(path.parent_path(), ec);
  fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0666);
  if (fd_ < 0) {
    static std::atomic<bool> said{false};
    if (!said.exchange(true))
      spdlog::warn("cannot open the GPU lock {} ({}): measurements are not serialized with other kagent processes",
                   path.string(), std::strerror(errno));
    return;
  }
  if (::flock(fd_, LOCK_EX | LOCK_NB) == 0) return;
  if (on_wait) on_wait();
  while (::flock(fd_, LOCK_EX) != 0) {
    if (errno == EINTR) continue;
    spdlog::warn("cannot lock {} ({}): going on unlocked", path.string(), std::strerror(errno));
    ::close(fd_);
    fd_ = -1;
    return;
  }
}

GpuLock::~GpuLock() {
  if (fd_ >= 0) ::close(fd_);  // closing the descriptor releases the lock
}

std::filesystem::path gpu_lock_path(const std::filesystem::path& cache_dir, const std::string& gpu_uuid, int gpu) {
  std::string id;
  for (char c : gpu_uuid)  // a UUID is [0-9a-f-]; anything else stays out of the file name
    if (std::isalnum(static_cast<unsigned char>(c)) || c == '-') id += c;
  if (id.empty()) id = fmt::format("index{}", gpu);
  return cache_dir / "locks" / fmt::format("gpu-{}.lock", id);
}

}  // namespace kagent
