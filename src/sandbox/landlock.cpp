#include "kagent/sandbox/landlock.hpp"

#include <fcntl.h>
#include <linux/landlock.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#include "kagent/common/error.hpp"

// Older libc and kernel headers: the numbers are the same on every architecture (Linux 5.13).
#ifndef SYS_landlock_create_ruleset
#define SYS_landlock_create_ruleset 444
#endif
#ifndef SYS_landlock_add_rule
#define SYS_landlock_add_rule 445
#endif
#ifndef SYS_landlock_restrict_self
#define SYS_landlock_restrict_self 446
#endif
#ifndef LANDLOCK_ACCESS_FS_REFER
#define LANDLOCK_ACCESS_FS_REFER (1ULL << 13)
#endif
#ifndef LANDLOCK_ACCESS_FS_TRUNCATE
#define LANDLOCK_ACCESS_FS_TRUNCATE (1ULL << 14)
#endif

namespace kagent::sandbox {

namespace {

// Closes a descriptor at scope exit.
class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  Fd(Fd&& o) noexcept : fd_(o.fd_) { o.fd_ = -1; }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  Fd& operator=(Fd&&) = delete;
  ~Fd() {
    if (fd_ >= 0) close(fd_);
  }
  int get() const { return fd_; }

 private:
  int fd_;
};

// An O_PATH descriptor of a directory to allow writes beneath; InputError naming it otherwise.
Fd open_writable_dir(const std::string& path) {
  Fd fd(open(path.c_str(), O_PATH | O_CLOEXEC));
  if (fd.get() < 0) throw InputError(fmt::format("cannot confine writes to {}: {}", path, std::strerror(errno)));
  struct stat st {};
  if (fstat(fd.get(), &st) != 0 || !S_ISDIR(st.st_mode))
    throw InputError(fmt::format("cannot confine writes to {}: not a directory", path));
  return fd;
}

}  // namespace

unsigned long long landlock_write_rights(int abi) {
  if (abi < 1) return 0;
  unsigned long long rights = LANDLOCK_ACCESS_FS_WRITE_FILE | LANDLOCK_ACCESS_FS_REMOVE_DIR |
                              LANDLOCK_ACCESS_FS_REMOVE_FILE | LANDLOCK_ACCESS_FS_MAKE_CHAR |
                              LANDLOCK_ACCESS_FS_MAKE_DIR | LANDLOCK_ACCESS_FS_MAKE_REG | LANDLOCK_ACCESS_FS_MAKE_SOCK |
                              LANDLOCK_ACCESS_FS_MAKE_FIFO | LANDLOCK_ACCESS_FS_MAKE_BLOCK |
                              LANDLOCK_ACCESS_FS_MAKE_SYM;
  // Under ABI 1 a rename or link across directories is always refused (REFER is implied and
  // cannot be granted); from ABI 2 it is allowed within the writable directories.
  if (abi >= 2) rights |= LANDLOCK_ACCESS_FS_REFER;
  if (abi >= 3) rights |= LANDLOCK_ACCESS_FS_TRUNCATE;
  // Later ABIs add IOCTL_DEV (5), network and scope rights: not handled, so never restricted
  // (the GPU driver works through ioctls on /dev/nvidia*).
  return rights;
}

int landlock_abi() {
  long abi = syscall(SYS_landlock_create_ruleset, nullptr, 0, LANDLOCK_CREATE_RULESET_VERSION);
  return abi < 0 ? 0 : static_cast<int>(abi);
}

LandlockResult restrict_writes(const std::vector<std::string>& writable) {
  // Every path first: an error must come before anything is restricted.
  std::vector<Fd> dirs;
  dirs.reserve(writable.size());
  for (const std::string& path : writable) dirs.push_back(open_writable_dir(path));

  LandlockResult result;
  result.abi = landlock_abi();
  if (result.abi < 1) {
    result.warning = fmt::format("no Landlock on this kernel ({}): writes are not confined", std::strerror(errno));
    return result;
  }
  const unsigned long long rights = landlock_write_rights(result.abi);

  landlock_ruleset_attr attr{};  // fields of later ABIs stay zero: accepted by every kernel
  attr.handled_access_fs = rights;
  Fd ruleset(static_cast<int>(syscall(SYS_landlock_create_ruleset, &attr, sizeof attr, 0)));
  if (ruleset.get() < 0)
    throw EnvError(fmt::format("Landlock: cannot create a ruleset (ABI {}): {}", result.abi, std::strerror(errno)));

  for (size_t i = 0; i < dirs.size(); ++i) {
    landlock_path_beneath_attr rule{};
    rule.allowed_access = rights;
    rule.parent_fd = dirs[i].get();
    if (syscall(SYS_landlock_add_rule, ruleset.get(), LANDLOCK_RULE_PATH_BENEATH, &rule, 0) != 0)
      throw EnvError(fmt::format("Landlock: cannot allow writes beneath {}: {}", writable[i], std::strerror(errno)));
  }
  // Required of an unprivileged caller; it also keeps a setuid program from shedding the rules.
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
    throw EnvError(fmt::format("cannot set no_new_privs: {}", std::strerror(errno)));
  if (syscall(SYS_landlock_restrict_self, ruleset.get(), 0) != 0)
    throw EnvError(fmt::format("Landlock: cannot restrict this process: {}", std::strerror(errno)));
  result.enforced = true;
  return result;
}

}  // namespace kagent::sandbox
