#include "kagent/protocol/child_client.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>
#include <ctime>
#include <string_view>
#include <thread>
#include <utility>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "kagent/sandbox/process.hpp"
#include "kagent/sandbox/spawn.hpp"

namespace kagent {

namespace {

using Clock = std::chrono::steady_clock;
using Reply = ChildReply;

constexpr size_t kTailLines = 20;
constexpr std::string_view kPhasePrefix = "kagent-phase: ";
constexpr auto kGrace = std::chrono::seconds(2);
// A stderr line longer than this is cut: a runner printing megabytes without a newline must
// not grow kagent's memory.
constexpr size_t kMaxStderrLine = 4096;

double seconds(std::chrono::milliseconds ms) {
  return static_cast<double>(ms.count()) / 1000.0;
}

int ms_until(Clock::time_point deadline) {
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
  return static_cast<int>(std::clamp<long long>(left, 0, INT_MAX));
}

void close_fd(int& fd) {
  if (fd >= 0) close(fd);
  fd = -1;
}

// Pipe ends at fd >= 3, so that the dup2 onto 0/1/2 in the child can never overwrite another
// pipe end (possible when kagent was started with a standard stream closed).
bool make_pipe(int fds[2]) {
  if (pipe2(fds, O_CLOEXEC) != 0) return false;
  for (int i = 0; i < 2; ++i) {
    if (fds[i] >= 3) continue;
    int high = fcntl(fds[i], F_DUPFD_CLOEXEC, 3);
    close(fds[i]);
    fds[i] = high;
  }
  if (fds[0] >= 0 && fds[1] >= 0) return true;
  close_fd(fds[0]);
  close_fd(fds[1]);
  return false;
}

void set_nonblocking(int fd) {
  fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
}

// Waits up to `grace` for the runner to exit, then SIGKILLs its process group and reaps it.
// The exit is observed with WNOWAIT first so that the pid (and so the group id) cannot be
// reused by an unrelated process before the group kill. Returns the wait status.
int terminate_and_reap(pid_t pid, std::chrono::milliseconds grace) {
  const auto deadline = Clock::now() + grace;
  for (;;) {
    siginfo_t info{};
    int rc = waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOHANG | WNOWAIT);
    if (rc == 0 && info.si_pid == pid) break;
    if (rc != 0 && errno != EINTR) break;
    if (Clock::now() >= deadline) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  kill(-pid, SIGKILL);  // whatever the runner started in its group
  kill(pid, SIGKILL);   // in case its group could not be made
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return status;
}

std::string describe_status(int status) {
  if (WIFEXITED(status)) return fmt::format("exited with code {}", WEXITSTATUS(status));
  if (WIFSIGNALED(status))
    return fmt::format("killed by signal {} ({})", WTERMSIG(status), strsignal(WTERMSIG(status)));
  return fmt::format("ended with wait status {}", status);
}

std::string during(const std::string& phase) {
  return phase.empty() ? std::string("before any phase was reported") : "during: " + phase;
}

std::string with_tail(std::string message, const std::string& tail) {
  if (!tail.empty()) message += "\nrunner stderr:\n" + tail;
  return message;
}

// Blocks SIGPIPE in the calling thread while writing to the runner, so a runner that died
// with its stdin open turns into EPIPE instead of killing kagent. This is the thread-local
// equivalent of send(MSG_NOSIGNAL) for pipes: it leaves the process-wide disposition alone
// (other code, or a library, may rely on it). A SIGPIPE raised by our own write is consumed
// before unblocking; one already pending before we blocked is left for its owner.
class SigpipeGuard {
 public:
  SigpipeGuard() {
    sigset_t pipe_set;
    sigemptyset(&pipe_set);
    sigaddset(&pipe_set, SIGPIPE);
    sigset_t pending;
    sigpending(&pending);
    was_pending_ = sigismember(&pending, SIGPIPE) == 1;
    pthread_sigmask(SIG_BLOCK, &pipe_set, &old_);
  }
  ~SigpipeGuard() {
    if (raised_ && !was_pending_) {
      sigset_t pipe_set;
      sigemptyset(&pipe_set);
      sigaddset(&pipe_set, SIGPIPE);
      timespec zero{0, 0};
      while (sigtimedwait(&pipe_set, nullptr, &zero) < 0 && errno == EINTR) {
      }
    }
    pthread_sigmask(SIG_SETMASK, &old_, nullptr);
  }
  SigpipeGuard(const SigpipeGuard&) = delete;
  SigpipeGuard& operator=(const SigpipeGuard&) = delete;
  void note_epipe() { raised_ = true; }

 private:
  sigset_t old_{};
  bool was_pending_ = false;
  bool raised_ = false;
};

enum class WriteResult { ok, timeout, broken };

// Writes all of `data` to the non-blocking fd before the deadline (a runner that stopped
// reading must not block kagent past the request's limit).
WriteResult write_all(int fd, std::string_view data, Clock::time_point deadline) {
  SigpipeGuard guard;
  while (!data.empty()) {
    ssize_t n = write(fd, data.data(), data.size());
    if (n > 0) {
      data.remove_prefix(static_cast<size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) {
      pollfd pfd{fd, POLLOUT, 0};
      int wait = ms_until(deadline);
      if (wait == 0) return WriteResult::timeout;
      if (poll(&pfd, 1, wait) < 0 && errno != EINTR) return WriteResult::broken;
      continue;
    }
    if (n < 0 && errno == EPIPE) guard.note_epipe();
    return WriteResult::broken;
  }
  return WriteResult::ok;
}

// Reads what is available on a non-blocking fd into buf. Returns false at EOF or error.
bool read_available(int fd, std::string& buf) {
  char chunk[65536];
  for (;;) {
    ssize_t n = read(fd, chunk, sizeof chunk);
    if (n > 0) {
      buf.append(chunk, static_cast<size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return true;
    return false;  // EOF (0) or a real error: either way nothing more will come
  }
}

std::string excerpt(const std::string& s) {
  return s.size() <= 200 ? s : s.substr(0, 200) + "...";
}

}  // namespace

ChildClient::ChildClient(ChildOptions options) : opt_(std::move(options)) {}

ChildClient::~ChildClient() {
  stop(false);
}

bool ChildClient::start(Reply& r) {
  out_buf_.clear();
  err_buf_.clear();
  err_tail_.clear();
  restart_pending_ = false;
  auto fail = [&](std::string message) {
    r.failure = Reply::Failure::start;
    take_stderr(&r);
    r.message = with_tail(std::move(message), r.stderr_tail);
    return false;
  };

  // execve does no PATH search; a bare name is looked up here, once, with a clear error.
  std::string exe = opt_.runner_path.find('/') == std::string::npos ? find_in_path(opt_.runner_path) : opt_.runner_path;
  if (exe.empty() || access(exe.c_str(), X_OK) != 0)
    return fail(fmt::format("runner not found or not executable: '{}'", opt_.runner_path));

  std::vector<std::string> args{exe};
  args.insert(args.end(), opt_.args.begin(), opt_.args.end());
  std::vector<std::string> extra = opt_.env;
  extra.push_back(fmt::format("KAGENT_GPU={}", opt_.gpu));
  sandbox::SandboxPolicy policy = opt_.policy;
  if (!opt_.sandbox) {  // unsandboxed runs, for debugging: kagent's own environment and limits
    policy.environment.reset();
    policy.restricted = false;
  }

  int in[2] = {-1, -1}, out[2] = {-1, -1}, err[2] = {-1, -1};
  if (!make_pipe(in) || !make_pipe(out) || !make_pipe(err)) {
    int e = errno;
    for (int* p : {in, out, err}) {
      close_fd(p[0]);
      close_fd(p[1]);
    }
    return fail(fmt::format("cannot create pipes for the runner: {}", std::strerror(e)));
  }

  pid_t pid = -1;
  std::string spawn_error, launch_warning;
  try {
    const sandbox::SpawnRequest req{args, extra, in[0], out[1], err[1]};
    pid = opt_.launch && opt_.sandbox ? opt_.launch(req, &launch_warning) : sandbox::spawn(policy, req);
  } catch (const std::exception& e) {
    spawn_error = e.what();
  }
  close(in[0]);
  close(out[1]);
  close(err[1]);
  if (pid < 0) {
    close(in[1]);
    close(out[0]);
    close(err[0]);
    return fail(fmt::format("cannot start the runner: {}", spawn_error));
  }
  pid_ = pid;
  to_child_ = in[1];
  from_child_ = out[0];
  err_child_ = err[0];
  for (int fd : {to_child_, from_child_, err_child_}) set_nonblocking(fd);

  std::string line;
  if (!read_line(line, Clock::now() + opt_.start_timeout, r)) {
    std::string what;
    if (r.failure == Reply::Failure::timeout) {
      what = fmt::format("runner '{}' sent no hello line within {:.1f} s", exe, seconds(opt_.start_timeout));
      stop(true);
    } else {
      int status = terminate_and_reap(pid_, kGrace);
      pid_ = -1;
      std::string how = describe_status(status);
      if (WIFEXITED(status) && WEXITSTATUS(status) == sandbox::kExecFailedExit) how += ": could not execute it";
      if (WIFEXITED(status) && WEXITSTATUS(status) == sandbox::kSetupFailedExit) how += ": sandbox setup failed";
      what = fmt::format("runner '{}' {} before its hello line", exe, how);
      stop(true);
    }
    return fail(what);
  }
  auto hello = nlohmann::json::parse(line, nullptr, false);
  if (hello.is_discarded() || !hello.is_object() || hello.value("hello", std::string()) != opt_.hello_name) {
    stop(true);
    return fail(fmt::format("runner '{}' sent a malformed hello line: {}", exe, excerpt(line)));
  }
  hello_ = std::move(hello);
  sandbox_warning_ = launch_warning;
  if (auto sb = hello_.find("sandbox"); sb != hello_.end() && sb->is_object()) {
    if (auto w = sb->find("warning"); w != sb->end() && w->is_string())
      sandbox_warning_ += (sandbox_warning_.empty() ? "" : "; ") + w->get<std::string>();
  }
  ++starts_;
  spdlog::debug("runner started: pid {}, gpu {}, {}", pid_, opt_.gpu, hello_.dump());
  return true;
}

void ChildClient::stop(bool kill_now) {
  close_fd(to_child_);  // EOF on stdin: a well-behaved runner exits on its own
  if (pid_ > 0) terminate_and_reap(pid_, kill_now ? std::chrono::milliseconds(0) : kGrace);
  pid_ = -1;
  close_fd(from_child_);
  close_fd(err_child_);
  out_buf_.clear();
  err_buf_.clear();
}

bool ChildClient::alive() {
  if (pid_ <= 0) return false;
  int status = 0;
  pid_t r = waitpid(pid_, &status, WNOHANG);
  if (r == 0) return true;
  if (r == pid_) pid_ = -1;  // reaped: stop() has nothing left to wait for
  stop(true);
  return false;
}

bool ChildClient::read_line(std::string& line, Clock::time_point deadline, Reply& r) {
  // Splits complete stderr lines into phases and the diagnostic tail.
  auto take_err_lines = [&](bool flush_partial) {
    size_t pos;
    while ((pos = err_buf_.find('\n')) != std::string::npos || (flush_partial && !err_buf_.empty()) ||
           err_buf_.size() > kMaxStderrLine) {
      size_t len = pos == std::string::npos ? std::min(err_buf_.size(), kMaxStderrLine) : std::min(pos, kMaxStderrLine);
      std::string text = err_buf_.substr(0, len);
      err_buf_.erase(0, pos == std::string::npos || pos > kMaxStderrLine ? len : pos + 1);
      if (!text.empty() && text.back() == '\r') text.pop_back();
      if (text.starts_with(kPhasePrefix)) {
        r.last_phase = text.substr(kPhasePrefix.size());
        // With -v, a timeline: each child's steps, timestamped by the log's pattern (main.cpp).
        spdlog::debug("{}[{}] phase: {}", opt_.hello_name, pid_, r.last_phase);
        continue;
      }
      spdlog::debug("runner[{}]: {}", pid_, text);
      err_tail_.push_back(std::move(text));
      while (err_tail_.size() > kTailLines) err_tail_.pop_front();
    }
  };
  auto read_err = [&] {
    if (err_child_ < 0) return;
    bool open = read_available(err_child_, err_buf_);
    take_err_lines(!open);
    if (!open) close_fd(err_child_);
  };

  bool out_open = from_child_ >= 0;
  for (;;) {
    if (auto nl = out_buf_.find('\n'); nl != std::string::npos) {
      line = out_buf_.substr(0, nl);
      out_buf_.erase(0, nl + 1);
      read_err();  // stderr written before the reply is already in its pipe: keep it with this request
      return true;
    }
    if (!out_open) {
      // The runner closed stdout (it exited or crashed): collect its last words on stderr,
      // which it may still be writing, for a short while.
      auto drain_until = std::min(deadline, Clock::now() + std::chrono::milliseconds(500));
      while (err_child_ >= 0) {
        pollfd pfd{err_child_, POLLIN, 0};
        int wait = ms_until(drain_until);
        if (poll(&pfd, 1, wait) == 0 && wait == 0) break;
        read_err();
        if (Clock::now() >= drain_until) break;
      }
      r.failure = Reply::Failure::crashed;
      return false;
    }
    // Checked before polling, so that a runner streaming stderr cannot keep us past the deadline.
    int wait = ms_until(deadline);
    if (wait == 0) {
      read_err();
      r.failure = Reply::Failure::timeout;
      return false;
    }
    pollfd pfds[2] = {{from_child_, POLLIN, 0}, {err_child_, POLLIN, 0}};  // fd -1 is skipped
    int n = poll(pfds, 2, wait);
    if (n < 0 && errno != EINTR) {
      r.failure = Reply::Failure::crashed;
      return false;
    }
    if (n <= 0) continue;
    if (pfds[1].revents != 0) read_err();  // stderr first: a crash's phase line precedes the EOF
    if (pfds[0].revents != 0) out_open = read_available(from_child_, out_buf_);
  }
}

void ChildClient::take_stderr(Reply* r) {
  if (r != nullptr) {
    std::string tail;
    for (const auto& l : err_tail_) {
      if (!tail.empty()) tail += '\n';
      tail += l;
    }
    r->stderr_tail = std::move(tail);
  }
  err_tail_.clear();
}

Reply ChildClient::request(nlohmann::json req, std::chrono::milliseconds timeout, const NeedHandler& on_need) {
  Reply r;
  if (!req.is_object()) {
    r.failure = Reply::Failure::protocol;
    r.message = "a runner request must be a JSON object";
    return r;
  }
  if (restart_pending_ || !running()) {
    stop(false);  // after "restart": the old runner is exiting by itself; reap it
    if (!start(r)) return r;
    r.last_phase.clear();  // phases of the start-up are not this request's
  }

  const long id = next_id_++;
  req["id"] = id;
  // Replace rather than throw on invalid UTF-8 in a request (e.g. a file name from the model).
  std::string text = req.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  auto deadline = Clock::now() + timeout;

  auto fail = [&](Reply::Failure f, std::string message) {
    r.failure = f;
    take_stderr(&r);
    r.message = f == Reply::Failure::crashed ? with_tail(std::move(message), r.stderr_tail) : std::move(message);
    return r;
  };
  auto timed_out = [&] {
    stop(true);  // kill(-pgid, SIGKILL) and reap
    return fail(Reply::Failure::timeout,
                fmt::format("timed out after {:.1f} s {}", seconds(timeout), during(r.last_phase)));
  };

  const std::string what = req.value("cmd", std::string("?"));
  spdlog::debug("{}[{}] request {}: {}", opt_.hello_name, pid_, id, what);
  const auto sent = Clock::now();
  // A broken pipe means the runner is gone: read_line then sees its EOF and reports the exit.
  if (write_all(to_child_, text, deadline) == WriteResult::timeout) return timed_out();

  nlohmann::json body;
  for (;;) {
    std::string line;
    if (!read_line(line, deadline, r)) {
      if (r.failure == Reply::Failure::timeout) return timed_out();
      int status = terminate_and_reap(pid_, kGrace);
      pid_ = -1;
      stop(true);
      return fail(Reply::Failure::crashed, fmt::format("runner {} {}", describe_status(status), during(r.last_phase)));
    }
    body = nlohmann::json::parse(line, nullptr, false);
    if (body.is_discarded() || !body.is_object()) {
      stop(true);  // out of step with us: only a fresh runner can be trusted
      return fail(Reply::Failure::protocol, fmt::format("runner sent a malformed reply: {}", excerpt(line)));
    }
    auto got = body.find("id");
    if (got == body.end() || !got->is_number_integer() || got->get<long>() != id) {
      stop(true);
      return fail(Reply::Failure::protocol,
                  fmt::format("runner replied with id {} to request {}", got == body.end() ? "none" : got->dump(), id));
    }
    if (!body.contains("need")) break;
    if (!on_need) {
      stop(true);
      return fail(Reply::Failure::protocol,
                  fmt::format("runner asked for {} and nothing here answers that", body["need"].dump()));
    }
    const auto asked = Clock::now();
    nlohmann::json answer;
    try {
      answer = on_need(body);
    } catch (...) {
      stop(true);  // the runner waits for an answer it will never get
      throw;
    }
    deadline += Clock::now() - asked;  // the answer's time is not the runner's
    answer["id"] = id;
    text = answer.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
    if (write_all(to_child_, text, deadline) == WriteResult::timeout) return timed_out();
  }
  if (auto restart = body.find("restart"); restart != body.end() && *restart == true) restart_pending_ = true;
  take_stderr(&r);
  spdlog::debug("{}[{}] request {} ({}) answered in {:.3f} s", opt_.hello_name, pid_, id, what,
                std::chrono::duration<double>(Clock::now() - sent).count());
  r.body = std::move(body);
  return r;
}

}  // namespace kagent
