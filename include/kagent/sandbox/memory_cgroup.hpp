#pragma once
// A memory ceiling that counts what a jail really uses (its processes' memory, its tmpfs files,
// its SysV segments): a cgroup v2 of its own below kagent's, with memory.max and no swap, entered
// atomically at clone time (clone3's CLONE_INTO_CGROUP). Needs cgroup v2 at /sys/fs/cgroup, write
// access to kagent's cgroup (root has it), and the memory controller enabled below kagent's
// cgroup or enableable there (a cgroup that holds processes cannot hand controllers down, unless
// it is the root). Where any of that is missing the caller falls back to RLIMIT_DATA, which bounds
// private memory per process only.
#include <cstdint>
#include <memory>
#include <string>

namespace kagent::sandbox {

class MemoryCgroup {
 public:
  // A fresh cgroup limited to `bytes`; nullptr with *why set when none can be made here.
  static std::unique_ptr<MemoryCgroup> create(std::uint64_t bytes, std::string* why);
  MemoryCgroup(const MemoryCgroup&) = delete;
  MemoryCgroup& operator=(const MemoryCgroup&) = delete;
  ~MemoryCgroup();  // remove() once more

  int fd() const { return fd_; }  // O_DIRECTORY descriptor, for CLONE_INTO_CGROUP
  const std::string& path() const { return path_; }
  // How often the kernel's OOM killer ended a process of this cgroup (memory.events oom_kill).
  std::uint64_t oom_kills() const;
  // rmdir; false while processes of it live on.
  bool remove();

 private:
  MemoryCgroup(std::string path, int fd) : path_(std::move(path)), fd_(fd) {}
  std::string path_;
  int fd_ = -1;
  bool removed_ = false;
};

// Keeps the cgroups of long-running jails (spawn_jailed) until their processes are gone: each call
// first removes those already empty.
void keep_until_empty(std::unique_ptr<MemoryCgroup> cgroup);

}  // namespace kagent::sandbox
