#include "kagent/sandbox/capture.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <sstream>

#include <fmt/format.h>

#include "jail_start.hpp"

namespace kagent::sandbox {

namespace {

using Clock = std::chrono::steady_clock;

class Pipe {
 public:
  Pipe() {
    if (pipe2(fd_, O_CLOEXEC) != 0) throw EnvError(fmt::format("cannot create a pipe: {}", std::strerror(errno)));
  }
  Pipe(const Pipe&) = delete;
  Pipe& operator=(const Pipe&) = delete;
  ~Pipe() {
    close_read();
    close_write();
  }
  int read_end() const { return fd_[0]; }
  int write_end() const { return fd_[1]; }
  void close_read() {
    if (fd_[0] >= 0) close(fd_[0]);
    fd_[0] = -1;
  }
  void close_write() {
    if (fd_[1] >= 0) close(fd_[1]);
    fd_[1] = -1;
  }

 private:
  int fd_[2] = {-1, -1};
};

void kill_all(pid_t pid) {
  kill(-pid, SIGKILL);
  kill(pid, SIGKILL);
}

// Output until EOF and the child reaped, or the deadline (then everything is killed and what was
// written before is read for a second more). Without a pid namespace a background process that
// left the process group may hold the pipe: once the program is reaped the group is killed and
// output is read for a second more.
int collect(pid_t pid, int out, Clock::time_point start, std::chrono::milliseconds timeout, const OutputSink& sink,
            CaptureResult& r) {
  const auto deadline = start + timeout;
  auto drain_until = Clock::time_point::max();
  bool eof = false, reaped = false;
  int status = 0;
  char buf[65536];
  for (;;) {
    auto now = Clock::now();
    if (!r.timed_out && !reaped && now >= deadline) {
      r.timed_out = true;
      kill_all(pid);
      drain_until = now + std::chrono::seconds(1);
    }
    if (!reaped) {
      pid_t w = waitpid(pid, &status, WNOHANG);
      if (w == pid || (w < 0 && errno == ECHILD)) {
        reaped = true;
        kill(-pid, SIGKILL);  // what it left behind in its group
        drain_until = std::min(drain_until, now + std::chrono::seconds(1));
      }
    }
    if (eof && reaped) break;
    if (now >= drain_until) break;
    if (eof) {
      usleep(2000);
      continue;
    }
    pollfd pfd{out, POLLIN, 0};
    int pr = poll(&pfd, 1, 20);
    if (pr <= 0) continue;
    ssize_t n = read(out, buf, sizeof buf);
    if (n > 0) {
      sink(buf, static_cast<size_t>(n));
    } else if (n == 0 || errno != EINTR) {
      eof = true;
    }
  }
  if (!reaped) {
    kill_all(pid);
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
  }
  return status;
}

void set_status(CaptureResult& r, int status) {
  if (WIFEXITED(status)) r.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) r.signal = WTERMSIG(status);
}

}  // namespace

CaptureResult run_jailed(const JailSpec& spec, const SpawnRequest& request, std::chrono::milliseconds timeout,
                         const OutputSink& sink) {
  CaptureResult r;
  const auto start = Clock::now();
  Pipe out, report;
  SpawnRequest req = request;
  req.stdin_fd = -1;
  req.stdout_fd = out.write_end();
  req.stderr_fd = out.write_end();
  JailStart s = start_jail(spec, req, report.write_end());
  r.memory = s.memory;
  out.close_write();
  report.close_write();
  int status = collect(s.pid, out.read_end(), start, timeout, sink, r);
  r.seconds = std::chrono::duration<double>(Clock::now() - start).count();

  // Every holder of the report pipe is gone now (the child closed it at exec, or init at its end).
  fcntl(report.read_end(), F_SETFL, O_NONBLOCK);
  std::string text;
  char buf[4096];
  ssize_t n;
  while ((n = read(report.read_end(), buf, sizeof buf)) > 0) text.append(buf, static_cast<size_t>(n));
  std::istringstream lines(text);
  std::string line;
  bool from_init = false;
  while (std::getline(lines, line)) {
    if (line.rfind("status ", 0) == 0) {
      status = std::atoi(line.c_str() + 7);
      from_init = true;
    } else if (r.setup_error.empty() && !line.empty()) {
      r.setup_error = line;
    }
  }
  if (!from_init && !r.timed_out && spec.namespaces.pid && r.setup_error.empty() && !WIFSIGNALED(status))
    r.setup_error = fmt::format("the jail's init ended without a report (wait status {})", status);
  set_status(r, status);
  if (s.cgroup) {
    r.out_of_memory = s.cgroup->oom_kills() > 0;
    if (!s.cgroup->remove()) keep_until_empty(std::move(s.cgroup));
  }
  return r;
}

CaptureResult run_spawned(const SandboxPolicy& policy, const SpawnRequest& request, std::chrono::milliseconds timeout,
                          const OutputSink& sink) {
  CaptureResult r;
  const auto start = Clock::now();
  Pipe out;
  SpawnRequest req = request;
  req.stdin_fd = -1;
  req.stdout_fd = out.write_end();
  req.stderr_fd = out.write_end();
  pid_t pid = spawn(policy, req);
  out.close_write();
  set_status(r, collect(pid, out.read_end(), start, timeout, sink, r));
  r.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  r.memory.how = "none";
  return r;
}

}  // namespace kagent::sandbox
