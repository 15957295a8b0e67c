#include "kagent/sandbox/memory_cgroup.hpp"

#include <fcntl.h>
#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <mutex>
#include <sstream>
#include <vector>

#include <fmt/format.h>

#include "kagent/sandbox/process_setup.hpp"

namespace kagent::sandbox {

namespace {

constexpr const char* kCgroupRoot = "/sys/fs/cgroup";

// kagent's own cgroup v2 path ("0::/path" in /proc/self/cgroup), or empty.
std::string own_cgroup() {
  std::ifstream in("/proc/self/cgroup");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("0::", 0) == 0) return line.substr(3);
  return "";
}

bool write_file(const std::string& path, const std::string& text) {
  return write_proc_file(path.c_str(), text);
}

std::string errno_text() {
  return std::strerror(errno);
}

}  // namespace

std::unique_ptr<MemoryCgroup> MemoryCgroup::create(std::uint64_t bytes, std::string* why) {
  struct statfs fs {};
  if (statfs(kCgroupRoot, &fs) != 0 || fs.f_type != CGROUP2_SUPER_MAGIC) {
    *why = fmt::format("{} is not a cgroup v2 file system", kCgroupRoot);
    return nullptr;
  }
  std::string own = own_cgroup();
  if (own.empty()) {
    *why = "kagent's cgroup v2 path is not in /proc/self/cgroup";
    return nullptr;
  }
  std::string parent = std::string(kCgroupRoot) + (own == "/" ? "" : own);
  static std::atomic<unsigned> counter{0};
  std::string path = fmt::format("{}/kagent-jail-{}-{}", parent, getpid(), counter++);
  if (mkdir(path.c_str(), 0755) != 0) {
    *why = fmt::format("cannot create {}: {}", path, errno_text());
    return nullptr;
  }
  std::unique_ptr<MemoryCgroup> cg(new MemoryCgroup(path, -1));
  if (access((path + "/memory.max").c_str(), F_OK) != 0 && !write_file(parent + "/cgroup.subtree_control", "+memory")) {
    *why = errno == EBUSY ? fmt::format("the memory controller cannot be enabled below {}: it holds processes", parent)
                          : fmt::format("cannot enable the memory controller in {}: {}", parent, errno_text());
    return nullptr;
  }
  if (!write_file(path + "/memory.max", std::to_string(bytes))) {
    *why = fmt::format("cannot write {}/memory.max: {}", path, errno_text());
    return nullptr;
  }
  // No swap: the ceiling is memory, not memory plus disk. Absent without swap accounting.
  if (access((path + "/memory.swap.max").c_str(), F_OK) == 0) write_file(path + "/memory.swap.max", "0");
  cg->fd_ = open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (cg->fd_ < 0) {
    *why = fmt::format("cannot open {}: {}", path, errno_text());
    return nullptr;
  }
  return cg;
}

MemoryCgroup::~MemoryCgroup() {
  remove();
  if (fd_ >= 0) close(fd_);
}

std::uint64_t MemoryCgroup::oom_kills() const {
  std::ifstream in(path_ + "/memory.events");
  std::string key;
  std::uint64_t value = 0;
  while (in >> key >> value)
    if (key == "oom_kill") return value;
  return 0;
}

bool MemoryCgroup::remove() {
  if (removed_) return true;
  removed_ = rmdir(path_.c_str()) == 0 || errno == ENOENT;
  return removed_;
}

void keep_until_empty(std::unique_ptr<MemoryCgroup> cgroup) {
  static std::mutex mutex;
  static std::vector<std::unique_ptr<MemoryCgroup>> kept;
  std::lock_guard<std::mutex> lock(mutex);
  std::erase_if(kept, [](const std::unique_ptr<MemoryCgroup>& c) { return c->remove(); });
  if (cgroup) kept.push_back(std::move(cgroup));
}

}  // namespace kagent::sandbox
