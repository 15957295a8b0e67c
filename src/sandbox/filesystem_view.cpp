#include "kagent/sandbox/filesystem_view.hpp"

#include <fcntl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace kagent::sandbox {

namespace fs = std::filesystem;

namespace {

unsigned long locked_flags(const std::string& path) {
  struct statvfs st {};
  if (statvfs(path.c_str(), &st) != 0) return 0;
  unsigned long flags = 0;
  if (st.f_flag & ST_NOSUID) flags |= MS_NOSUID;
  if (st.f_flag & ST_NODEV) flags |= MS_NODEV;
  if (st.f_flag & ST_NOEXEC) flags |= MS_NOEXEC;
  return flags;
}

// "/proc/self/fd/N" without snprintf (not async-signal-safe).
void fd_path(char (&buf)[32], int fd) {
  const char prefix[] = "/proc/self/fd/";
  char digits[12];
  int n = 0;
  do {
    digits[n++] = static_cast<char>('0' + fd % 10);
    fd /= 10;
  } while (fd > 0 && n < 11);
  size_t i = 0;
  for (; prefix[i] != '\0'; ++i) buf[i] = prefix[i];
  while (n > 0) buf[i++] = digits[--n];
  buf[i] = '\0';
}

std::string unescape_mountinfo(const std::string& s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    auto octal = [&](size_t k) { return k < s.size() && s[k] >= '0' && s[k] <= '7'; };
    if (s[i] == '\\' && octal(i + 1) && octal(i + 2) && octal(i + 3)) {  // "\040" is a space
      out += static_cast<char>((s[i + 1] - '0') * 64 + (s[i + 2] - '0') * 8 + (s[i + 3] - '0'));
      i += 3;
    } else {
      out += s[i];
    }
  }
  return out;
}

std::string normal(const std::string& path) {
  std::string p = fs::path(path).lexically_normal().string();
  while (p.size() > 1 && p.back() == '/') p.pop_back();
  return p;
}

}  // namespace

bool is_within(const std::string& path, const std::string& dir) {
  if (dir == "/") return true;
  return path == dir || (path.size() > dir.size() && path.compare(0, dir.size(), dir) == 0 && path[dir.size()] == '/');
}

bool FilesystemView::covered(const std::string& path) const {
  return std::any_of(entries_.begin(), entries_.end(), [&](const Entry& e) {
    bool holds = e.kind == Kind::bind_read_only || e.kind == Kind::bind_writable || e.kind == Kind::symlink;
    return holds && (e.kind == Kind::symlink ? e.target == path : is_within(path, e.target));
  });
}

void FilesystemView::add_bind(Kind kind, const std::string& raw, int depth) {
  if (raw.empty() || raw[0] != '/' || depth > 8) return;
  std::string path = normal(raw);
  if (kind == Kind::bind_read_only && covered(path)) return;
  struct stat st {};
  if (lstat(path.c_str(), &st) != 0) return;  // missing: nothing to show
  if (S_ISLNK(st.st_mode)) {
    std::error_code ec;
    fs::path link = fs::read_symlink(path, ec);
    if (ec) return;
    entries_.push_back({Kind::symlink, link.string(), path, "", {}, 0, false, -1});
    fs::path target = link.is_absolute() ? link : fs::path(path).parent_path() / link;
    add_bind(kind, target.lexically_normal().string(), depth + 1);
    return;
  }
  if (!S_ISDIR(st.st_mode) && !S_ISREG(st.st_mode)) return;  // sockets, FIFOs, devices: never by bind
  entries_.push_back({kind, path, path, "", {}, locked_flags(path), S_ISDIR(st.st_mode), -1});
}

void FilesystemView::add_read_only(const std::string& path) {
  add_bind(Kind::bind_read_only, path, 0);
}

void FilesystemView::add_writable(const std::string& path) {
  add_bind(Kind::bind_writable, path, 0);
}

void FilesystemView::add_device(const std::string& path) {
  struct stat st {};
  if (lstat(path.c_str(), &st) != 0 || !(S_ISCHR(st.st_mode) || S_ISDIR(st.st_mode))) return;
  entries_.push_back({Kind::device, path, path, "", {}, 0, S_ISDIR(st.st_mode), -1});
}

void FilesystemView::add_tmpfs(const std::string& path, const std::string& options) {
  entries_.push_back({Kind::tmpfs, options, normal(path), "", {}, 0, true, -1});
}

void FilesystemView::add_symlink(const std::string& path, const std::string& target) {
  entries_.push_back({Kind::symlink, target, normal(path), "", {}, 0, false, -1});
}

void FilesystemView::add_proc(const std::string& path, bool process_files_writable) {
  entries_.push_back({Kind::proc, process_files_writable ? "rw" : "", normal(path), "", {}, 0, true, -1});
}

void FilesystemView::protect_host_mounts(const std::string& except) {
  std::ifstream in("/proc/self/mountinfo");
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::string id, parent, dev, root, point;
    if (!(fields >> id >> parent >> dev >> root >> point)) continue;
    point = unescape_mountinfo(point);
    if (!except.empty() && is_within(point, normal(except))) continue;
    if (std::find(host_mounts_.begin(), host_mounts_.end(), point) != host_mounts_.end()) continue;
    struct statvfs st {};
    if (statvfs(point.c_str(), &st) != 0) continue;  // unreachable for us: for the child too
    host_mounts_.push_back(point);
    host_mount_flags_.push_back(locked_flags(point));
  }
}

void FilesystemView::finish(const std::string& staging) {
  staging_ = normal(staging);
  proc_read_only_.clear();
  for (auto& e : entries_) {
    e.staged = staging_ + e.target;
    if (e.kind == Kind::proc && e.source == "rw")
      for (const char* sub : {"sys", "sysrq-trigger", "irq", "bus", "fs", "driver"})
        proc_read_only_.push_back(e.staged + "/" + sub);
    for (size_t i = e.target.find('/', 1); i != std::string::npos; i = e.target.find('/', i + 1))
      e.parents.push_back(staging_ + e.target.substr(0, i));
  }
}

std::vector<std::string> FilesystemView::visible_paths() const {
  std::vector<std::string> out;
  for (const auto& e : entries_) {
    const char* how = e.kind == Kind::bind_writable ? " (writable)"
                      : e.kind == Kind::tmpfs       ? " (empty, private)"
                      : e.kind == Kind::symlink     ? " (symlink)"
                      : e.kind == Kind::proc        ? " (own processes only)"
                                                    : "";
    out.push_back(e.target + how);
  }
  return out;
}

const char* FilesystemView::enter(const char** path) {
  *path = nullptr;
  // Nothing done here may propagate back to the host's mounts.
  if (mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) return "make mounts private";
  for (size_t i = 0; i < host_mounts_.size(); ++i) {
    const char* m = host_mounts_[i].c_str();
    if (mount(nullptr, m, nullptr, MS_REMOUNT | MS_BIND | MS_RDONLY | host_mount_flags_[i], nullptr) == 0) continue;
    // Gone, hidden under another mount, or not reachable by us: the child cannot get there either.
    if (errno == ENOENT || errno == EACCES || errno == ENOTDIR || errno == EINVAL) continue;
    *path = m;
    return "remount read-only";
  }
  // Sources are opened before the staging tmpfs (or an earlier entry) can hide them.
  for (auto& e : entries_) {
    if (e.kind != Kind::bind_read_only && e.kind != Kind::bind_writable && e.kind != Kind::device) continue;
    e.fd = open(e.source.c_str(), O_PATH | O_CLOEXEC);
    if (e.fd < 0 && e.kind == Kind::bind_writable) {
      *path = e.source.c_str();
      return "open";
    }
  }
  if (mount("tmpfs", staging_.c_str(), "tmpfs", MS_NOSUID | MS_NODEV, "mode=755") != 0) {
    *path = staging_.c_str();
    return "mount the new root";
  }
  char src[32];
  for (auto& e : entries_) {
    *path = e.target.c_str();
    for (const auto& p : e.parents) mkdir(p.c_str(), 0755);
    const char* target = e.staged.c_str();
    switch (e.kind) {
      case Kind::bind_read_only:
      case Kind::bind_writable:
      case Kind::device: {
        if (e.fd < 0) continue;  // vanished since the plan: nothing to show
        if (e.is_dir) {
          mkdir(target, 0755);
        } else {
          int fd = open(target, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
          if (fd >= 0) close(fd);
        }
        fd_path(src, e.fd);
        if (mount(src, target, nullptr, MS_BIND | MS_REC, nullptr) != 0) return "bind";
        close(e.fd);
        e.fd = -1;
        if (e.kind == Kind::device) continue;
        // A bind keeps the read-only flag of the mount it came from: set or clear it on this one.
        unsigned long ro = e.kind == Kind::bind_read_only ? MS_RDONLY : 0;
        if (mount(nullptr, target, nullptr, MS_REMOUNT | MS_BIND | ro | e.flags, nullptr) != 0)
          return ro != 0 ? "remount read-only" : "remount writable";
        break;
      }
      case Kind::tmpfs:
        mkdir(target, 0755);
        if (mount("tmpfs", target, "tmpfs", MS_NOSUID | MS_NODEV, e.source.c_str()) != 0) return "mount tmpfs";
        break;
      case Kind::symlink:
        if (symlink(e.source.c_str(), target) != 0 && errno != EEXIST) return "symlink";
        break;
      case Kind::proc:
        mkdir(target, 0555);
        // Not possible everywhere (a container's /proc with masked paths refuses it): then the
        // directory stays empty rather than showing the host's processes and their environments.
        if (e.source != "rw") {
          mount("proc", target, "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC | MS_RDONLY, nullptr);
          break;
        }
        if (mount("proc", target, "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, nullptr) != 0) break;  // stays empty
        for (const auto& ro : proc_read_only_) {
          *path = ro.c_str();
          if (mount(ro.c_str(), ro.c_str(), nullptr, MS_BIND | MS_REC, nullptr) != 0) {
            if (errno == ENOENT) continue;  // not in this kernel's /proc
            return "bind /proc part";
          }
          if (mount(nullptr, ro.c_str(), nullptr, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC,
                    nullptr) != 0)
            return "remount /proc part read-only";
        }
        break;
    }
  }
  *path = staging_.c_str();
  // The root itself read-only: only the writable binds and the scratch tmpfs take writes.
  if (mount(nullptr, staging_.c_str(), nullptr, MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV, "mode=755") != 0)
    return "remount the new root read-only";
  if (chdir(staging_.c_str()) != 0) return "chdir";
  // pivot_root(".", "."): the old root ends up on top of the new one and is detached next.
  if (syscall(SYS_pivot_root, ".", ".") != 0) return "pivot_root";
  if (umount2(".", MNT_DETACH) != 0) return "detach the old root";
  if (chdir("/") != 0) return "chdir /";
  *path = nullptr;
  return nullptr;
}

}  // namespace kagent::sandbox
