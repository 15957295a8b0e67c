#include "kagent/sandbox/process.hpp"

#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <filesystem>

#include "kagent/sandbox/spawn.hpp"

namespace kagent {

std::string find_in_path(const std::string& program) {
  if (program.find('/') != std::string::npos) return access(program.c_str(), X_OK) == 0 ? program : "";
  const char* path = std::getenv("PATH");
  if (path == nullptr) return "";
  std::string all = path;
  size_t start = 0;
  while (start <= all.size()) {
    size_t end = all.find(':', start);
    if (end == std::string::npos) end = all.size();
    std::string dir = all.substr(start, end - start);
    if (!dir.empty()) {
      std::string candidate = dir + "/" + program;
      if (access(candidate.c_str(), X_OK) == 0) return candidate;
    }
    start = end + 1;
  }
  return "";
}

std::string self_dir() {
  std::error_code ec;
  auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? std::string(".") : exe.parent_path().string();
}

std::filesystem::path data_dir(const std::string& sub) {
  const auto installed = std::filesystem::path(self_dir()).parent_path() / "share" / "kagent" / sub;
  std::error_code ec;
  if (std::filesystem::is_directory(installed, ec)) return installed;
  return std::filesystem::path(KAGENT_SOURCE_DIR_DEFAULT) / sub;
}

ProcessResult run_capture(const std::vector<std::string>& argv, std::chrono::milliseconds timeout,
                          const std::string& stdin_data) {
  ProcessResult result;
  if (argv.empty()) return result;
  if (find_in_path(argv[0]).empty()) return result;

  int out_pipe[2], in_pipe[2];
  if (pipe2(out_pipe, O_CLOEXEC) != 0) return result;
  if (pipe2(in_pipe, O_CLOEXEC) != 0) {
    close(out_pipe[0]);
    close(out_pipe[1]);
    return result;
  }
  // Default signals, its own process group (a timeout kills the child and anything it started),
  // death with kagent: the helper policy of the sandbox module.
  pid_t pid = -1;
  try {
    pid = sandbox::spawn(sandbox::helper_policy(), {argv, {}, in_pipe[0], out_pipe[1], out_pipe[1]});
  } catch (const std::exception&) {
    pid = -1;
  }
  close(out_pipe[1]);
  close(in_pipe[0]);
  if (pid < 0) {
    close(out_pipe[0]);
    close(in_pipe[1]);
    return result;
  }
  result.started = true;
  // Small inputs only (a script on stdin); larger ones would need to be interleaved with reads.
  if (!stdin_data.empty()) {
    signal(SIGPIPE, SIG_IGN);
    [[maybe_unused]] ssize_t w = write(in_pipe[1], stdin_data.data(), stdin_data.size());
  }
  close(in_pipe[1]);

  const auto deadline = std::chrono::steady_clock::now() + timeout;
  char buf[4096];
  for (;;) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      result.timed_out = true;
      kill(-pid, SIGKILL);
      break;
    }
    pollfd pfd{out_pipe[0], POLLIN, 0};
    int pr = poll(&pfd, 1, static_cast<int>(std::min<int64_t>(left.count(), INT_MAX)));
    if (pr < 0 && errno == EINTR) continue;
    if (pr == 0) continue;
    ssize_t n = read(out_pipe[0], buf, sizeof buf);
    if (n > 0) {
      result.output.append(buf, static_cast<size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    break;  // EOF
  }
  close(out_pipe[0]);
  // The child may close its output and keep running: the deadline still holds.
  int status = 0;
  for (;;) {
    pid_t w = waitpid(pid, &status, WNOHANG);
    if (w == pid || (w < 0 && errno != EINTR)) break;
    if (std::chrono::steady_clock::now() >= deadline && !result.timed_out) {
      result.timed_out = true;
      kill(-pid, SIGKILL);
    }
    usleep(2000);
  }
  if (WIFEXITED(status)) result.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) result.signal = WTERMSIG(status);
  return result;
}

}  // namespace kagent
