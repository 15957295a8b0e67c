#pragma once
// An exclusive flock(2) on a file for as long as the object lives: writers of one shared file (a
// baselines file) and measurements on one GPU (gpu_lock.hpp) queue up on it across threads and
// processes. Closing the descriptor releases the lock, so a crashed holder never leaves it taken.
#include <filesystem>
#include <functional>

namespace kagent {

class FileLock {
 public:
  // Waits for the lock on `path`, creating the file and its folder when missing; `on_wait` is
  // called once, before waiting, when another holder has it. Throws EnvError naming the file when
  // it cannot be opened or locked.
  explicit FileLock(const std::filesystem::path& path, const std::function<void()>& on_wait = {});
  ~FileLock();
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;

 private:
  int fd_ = -1;
};

}  // namespace kagent
