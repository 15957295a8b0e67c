#pragma once
// Small helpers shared by the tests: a temporary folder removed at scope exit, file writing,
// and paths to the repository's examples and ../shared.
#include <fcntl.h>
#include <spawn.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

namespace kagent::test {

inline std::filesystem::path source_dir() {
  return KAGENT_SOURCE_DIR;
}
inline std::filesystem::path examples_dir() {
  return source_dir() / "examples";
}
inline std::filesystem::path shared_dir() {
  return KAGENT_SHARED_DIR;
}
inline std::filesystem::path binary_dir() {
  return KAGENT_BINARY_DIR;
}
// KernelBench problems: $KAGENT_KERNELBENCH_DIR (a machine without ../shared, e.g. the GPU
// machine, gets a copy of the problems there), else ../shared/kernelbench.
inline std::filesystem::path kernelbench_dir() {
  const char* d = std::getenv("KAGENT_KERNELBENCH_DIR");
  return d != nullptr && *d != '\0' ? std::filesystem::path(d) : shared_dir() / "kernelbench";
}

// `kagent optimize` arguments that also run where there is no GPU (the agent loop's tests run in CI
// without one): --without-gpu after "optimize", unless --options gives every setting. With a GPU
// the flag changes nothing.
inline std::vector<std::string> optimize_anywhere(std::vector<std::string> args) {
  auto is = [&](const char* a) {
    for (const auto& x : args)
      if (x == a) return true;
    return false;
  };
  if (!args.empty() && args[0] == "optimize" && !is("--options") && !is("--without-gpu"))
    args.insert(args.begin() + 1, "--without-gpu");
  return args;
}

// `env ENV... kagent ARGS...` started in the background, its stderr (and its stdout too when `both`)
// into `log` when one is given: its pid, -1 when it could not be started.
inline pid_t spawn_kagent(const std::vector<std::string>& env, const std::vector<std::string>& args,
                          const std::string& log = "", bool both = false) {
  std::vector<std::string> argv = {"/usr/bin/env"};
  argv.insert(argv.end(), env.begin(), env.end());
  argv.push_back((binary_dir() / "kagent").string());
  argv.insert(argv.end(), args.begin(), args.end());
  std::vector<char*> cargv;
  for (auto& a : argv) cargv.push_back(a.data());
  cargv.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  if (!log.empty()) {
    posix_spawn_file_actions_addopen(&fa, 2, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (both) posix_spawn_file_actions_adddup2(&fa, 2, 1);
  }
  pid_t pid = -1;
  if (posix_spawn(&pid, cargv[0], &fa, nullptr, cargv.data(), environ) != 0) pid = -1;
  posix_spawn_file_actions_destroy(&fa);
  return pid;
}

class TempDir {
 public:
  TempDir() {
    std::string templ = (std::filesystem::temp_directory_path() / "kagent-test-XXXXXX").string();
    char* made = mkdtemp(templ.data());
    if (made == nullptr) throw std::runtime_error("mkdtemp failed");
    path_ = made;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::filesystem::path& path() const { return path_; }
  std::filesystem::path operator/(const std::string& name) const { return path_ / name; }

  // Writes name (creating parent folders) and returns its full path.
  std::filesystem::path write(const std::string& name, const std::string& contents) const {
    auto p = path_ / name;
    std::filesystem::create_directories(p.parent_path());
    std::ofstream(p, std::ios::binary) << contents;
    return p;
  }

 private:
  std::filesystem::path path_;
};

// Sets (or, with nullptr, unsets) an environment variable for the scope, then restores it.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    if (value != nullptr) {
      setenv(name, value, 1);
    } else {
      unsetenv(name);
    }
  }
  ~ScopedEnv() {
    if (old_) {
      setenv(name_.c_str(), old_->c_str(), 1);
    } else {
      unsetenv(name_.c_str());
    }
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  std::string name_;
  std::optional<std::string> old_;
};

}  // namespace kagent::test
