#pragma once
// A private file system view: a fresh, read-only tmpfs as the root, holding only the paths a
// policy names (bound read-only or writable), device nodes, scratch tmpfs and a /proc. Nothing
// else of the host exists inside (no home directories, /root, host /tmp, /run or sockets), so a
// path built at run time (a macro-built #include, `cat /root/.bashrc`) finds nothing.
//
// Built in two steps: the plan is made before fork (it allocates), and enter() runs in the
// child, in a mount namespace whose user namespace it holds CAP_SYS_ADMIN in, using raw system
// calls only (async-signal-safe).
#include <string>
#include <vector>

namespace kagent::sandbox {

class FilesystemView {
 public:
  // A host path made visible at the same path, read-only (or writable). A symlink is recreated
  // as a symlink and its target made visible too; a missing path is left out. A read-only path
  // inside one already visible is not added twice; a writable one is always bound.
  void add_read_only(const std::string& path);
  void add_writable(const std::string& path);
  // A host device node (or directory of them, like /dev/nvidia-caps) at the same path.
  void add_device(const std::string& path);
  // An empty tmpfs at `path` with mount options such as "mode=1777".
  void add_tmpfs(const std::string& path, const std::string& options);
  void add_symlink(const std::string& path, const std::string& target);
  // A fresh procfs (the caller's pid namespace must be its own); left empty where refused.
  // Read-only by default. With `process_files_writable`, a process's own files (/proc/self/...) take
  // writes, which the CUDA driver needs (cuInit fails with CUDA_ERROR_OPERATING_SYSTEM on a
  // read-only /proc); what writes there could change for the whole machine stays read-only, bound
  // over itself: /proc/sys (a sysctl checks only that the writer's uid is root, which a child
  // mapped to root is, capabilities or not), /proc/sysrq-trigger, /proc/irq, /proc/bus, /proc/fs and
  // /proc/driver.
  void add_proc(const std::string& path, bool process_files_writable = false);

  // Every host mount point (from /proc/self/mountinfo) except those within `except` is remounted
  // read-only, keeping its nosuid/nodev/noexec, in the child's mount namespace before the binds:
  // a recursive bind of /usr or /sys would otherwise carry a writable submount into the view.
  void protect_host_mounts(const std::string& except);

  // Ends the plan; `staging` is an existing host directory whose mount point holds the new root
  // while it is assembled (the host's copy is hidden by it and then detached).
  void finish(const std::string& staging = "/tmp");

  // In the child: builds the view and makes it the root (pivot_root; the old root is detached),
  // cwd "/". nullptr on success, else the failed step, with *path set and errno kept.
  const char* enter(const char** path);

  // The paths visible inside, for messages and docs/sandbox.md's table.
  std::vector<std::string> visible_paths() const;

 private:
  enum class Kind { bind_read_only, bind_writable, device, tmpfs, symlink, proc };
  struct Entry {
    Kind kind;
    std::string source;                // host path (binds, devices), options (tmpfs), link text (symlink)
    std::string target;                // the path inside the view
    std::string staged;                // staging + target
    std::vector<std::string> parents;  // staged directories to make first, outermost first
    unsigned long flags = 0;           // MS_NOSUID/NODEV/NOEXEC of the host mount (a user namespace must keep them)
    bool is_dir = true;
    int fd = -1;  // O_PATH descriptor of the source, opened by enter() before the staging mount
  };
  void add_bind(Kind kind, const std::string& path, int depth);
  bool covered(const std::string& path) const;

  std::vector<Entry> entries_;
  std::vector<std::string> proc_read_only_;  // staged paths bound read-only over a writable /proc
  std::vector<std::string> host_mounts_;     // remounted read-only first (protect_host_mounts)
  std::vector<unsigned long> host_mount_flags_;
  std::string staging_;
};

// True when `path` is `dir` or lies below it (plain string comparison of normalized paths).
bool is_within(const std::string& path, const std::string& dir);

}  // namespace kagent::sandbox
