#include "kagent/sandbox/system_view.hpp"

#include "kagent/sandbox/environment.hpp"

#include <dirent.h>

#include <cstdlib>
#include <cstring>

namespace kagent::sandbox {

namespace {

constexpr const char* kSystemDirs[] = {"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/opt", "/sys"};
constexpr const char* kEtcEntries[] = {"ld.so.cache", "ld.so.conf",     "ld.so.conf.d", "alternatives", "passwd",
                                       "group",       "nsswitch.conf",  "localtime",    "timezone",     "hosts",
                                       "host.conf",   "bash.bashrc",    "profile",      "inputrc",      "terminfo",
                                       "os-release",  "debian_version", "mime.types",   "python3",      "matplotlibrc"};
constexpr const char* kDevNodes[] = {"null", "zero", "full", "random", "urandom", "tty"};

}  // namespace

std::vector<std::string> system_read_only_paths() {
  std::vector<std::string> out(std::begin(kSystemDirs), std::end(kSystemDirs));
  for (const char* e : kEtcEntries) out.push_back(std::string("/etc/") + e);
  out.push_back(KAGENT_CUDA_HOME_DEFAULT);
  if (const char* home = std::getenv("KAGENT_CUDA_HOME"); home != nullptr && *home == '/') out.push_back(home);
  std::erase_if(out, [](const std::string& p) { return in_home_directory(p); });
  return out;
}

void add_private_dev(FilesystemView& v, bool gpu, std::uint64_t shm_bytes) {
  v.add_tmpfs("/dev", "mode=755,size=1048576");
  for (const char* name : kDevNodes) v.add_device(std::string("/dev/") + name);
  if (gpu) {
    if (DIR* d = opendir("/dev")) {
      while (dirent* e = readdir(d))
        if (std::strncmp(e->d_name, "nvidia", 6) == 0) v.add_device(std::string("/dev/") + e->d_name);
      closedir(d);
    }
  }
  v.add_symlink("/dev/fd", "/proc/self/fd");
  v.add_symlink("/dev/stdin", "/proc/self/fd/0");
  v.add_symlink("/dev/stdout", "/proc/self/fd/1");
  v.add_symlink("/dev/stderr", "/proc/self/fd/2");
  v.add_tmpfs("/dev/shm", "mode=1777,size=" + std::to_string(shm_bytes));
}

}  // namespace kagent::sandbox
