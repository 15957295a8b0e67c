#include "kagent/common/file_lock.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#include "kagent/common/error.hpp"

namespace kagent {

FileLock::FileLock(const std::filesystem::path& path, const std::function<void()>& on_wait) {
  std::error_code ec;
  if (path.has_parent_path()) std::filesystem::create_directories(path.parent_path(), ec);
  fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0666);
  if (fd_ < 0) throw EnvError(fmt::format("cannot open the lock {}: {}", path.string(), std::strerror(errno)));
  if (::flock(fd_, LOCK_EX | LOCK_NB) == 0) return;
  if (on_wait) on_wait();
  while (::flock(fd_, LOCK_EX) != 0) {
    if (errno == EINTR) continue;
    const int err = errno;
    ::close(fd_);
    throw EnvError(fmt::format("cannot lock {}: {}", path.string(), std::strerror(err)));
  }
}

FileLock::~FileLock() {
  ::close(fd_);  // releases the lock
}

}  // namespace kagent
