#include "kagent/compile/compile_worker_client.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <nlohmann/json.hpp>

#include "kagent/common/error.hpp"
#include "kagent/sandbox/process.hpp"
#include "kagent/sandbox/spawn.hpp"

namespace kagent {

namespace {

using Clock = std::chrono::steady_clock;

struct Pipe {
  int fd[2] = {-1, -1};
  Pipe() {
    if (pipe2(fd, O_CLOEXEC) != 0) throw EnvError(fmt::format("compile worker: pipe: {}", std::strerror(errno)));
  }
  ~Pipe() {
    for (int f : fd)
      if (f >= 0) close(f);
  }
  void close_end(int i) {
    if (fd[i] >= 0) close(fd[i]);
    fd[i] = -1;
  }
};

// Writes the request while reading the reply, so that neither side can block the other.
void exchange(int to, int from, int err, const std::string& request, std::string& out, std::string& err_text,
              Clock::time_point deadline) {
  size_t written = 0;
  fcntl(to, F_SETFL, fcntl(to, F_GETFL) | O_NONBLOCK);
  char buf[65536];
  bool out_open = true, err_open = true;
  while (out_open || err_open) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) throw EnvError("compile worker: no answer in time");
    pollfd p[3] = {{from, POLLIN, 0}, {err, POLLIN, 0}, {to, POLLOUT, 0}};
    p[0].fd = out_open ? from : -1;
    p[1].fd = err_open ? err : -1;
    p[2].fd = to >= 0 && written < request.size() ? to : -1;
    int n = poll(p, 3, static_cast<int>(std::min<long long>(left, INT_MAX)));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw EnvError(fmt::format("compile worker: poll: {}", std::strerror(errno)));
    if (p[2].fd >= 0 && p[2].revents != 0) {
      ssize_t w = write(to, request.data() + written, request.size() - written);
      if (w > 0) written += static_cast<size_t>(w);
      if (w < 0 && errno != EAGAIN && errno != EINTR) written = request.size();  // gone: its exit says why
      if (written == request.size()) {
        close(to);
        to = -1;
      }
    }
    for (int i = 0; i < 2; ++i) {
      if (p[i].fd < 0 || p[i].revents == 0) continue;
      ssize_t r = read(p[i].fd, buf, sizeof buf);
      if (r > 0) {
        (i == 0 ? out : err_text).append(buf, static_cast<size_t>(r));
      } else if (r == 0 || (errno != EINTR && errno != EAGAIN)) {
        (i == 0 ? out_open : err_open) = false;
      }
    }
  }
  if (to >= 0) close(to);
}

}  // namespace

std::string compile_worker_path() {
  if (const char* w = std::getenv("KAGENT_COMPILE_WORKER"); w != nullptr && *w != '\0') return w;
  std::string beside = (std::filesystem::path(self_dir()) / "kagent-compile").string();
  if (access(beside.c_str(), X_OK) == 0) return beside;
  return KAGENT_COMPILE_WORKER_DEFAULT;
}

WorkerResult run_compile_worker(const WorkerCompile& request, std::chrono::seconds timeout) {
  const std::string exe = compile_worker_path();
  std::vector<std::string> argv = {exe};
  for (const auto& v : request.visible) argv.insert(argv.end(), {"--visible", v});
  nlohmann::json req = {{"name", request.name}, {"source", request.source}, {"options", request.options}};
  const std::string body = req.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);

  Pipe in, out, err;
  pid_t pid =
      sandbox::spawn(sandbox::compile_worker_policy(request.visible), {argv, {}, in.fd[0], out.fd[1], err.fd[1]});
  in.close_end(0);
  out.close_end(1);
  err.close_end(1);
  // A worker that died with its stdin open must turn into an error here, not a SIGPIPE.
  struct sigaction ignore {
  }, old{};
  ignore.sa_handler = SIG_IGN;
  sigaction(SIGPIPE, &ignore, &old);
  std::string reply, err_text;
  std::string failure;
  try {
    int to = in.fd[1];
    in.fd[1] = -1;  // exchange() closes it
    exchange(to, out.fd[0], err.fd[0], body, reply, err_text, Clock::now() + timeout);
  } catch (const std::exception& e) {
    failure = e.what();
    kill(-pid, SIGKILL);
  }
  sigaction(SIGPIPE, &old, nullptr);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (!failure.empty()) throw EnvError(fmt::format("{} ({}): {}", failure, exe, err_text));

  size_t nl = reply.find('\n');
  nlohmann::json head = nlohmann::json::parse(reply.substr(0, nl), nullptr, false);
  if (nl == std::string::npos || head.is_discarded() || !head.is_object()) {
    std::string how = WIFSIGNALED(status) ? fmt::format("killed by signal {}", WTERMSIG(status))
                                          : fmt::format("exit {}", WEXITSTATUS(status));
    throw EnvError(fmt::format("compile worker {} gave no reply ({}){}", exe, how,
                               err_text.empty() ? "" : ": " + err_text.substr(0, 2000)));
  }
  WorkerResult r;
  r.nvrtc_result = head.value("result", -1);
  r.error = head.value("error", std::string());
  r.log = head.value("log", std::string());
  r.isolation = head.value("isolation", std::string());
  r.warning = head.value("warning", std::string());
  size_t bytes = head.value("cubin_bytes", size_t{0});
  if (bytes > reply.size() - nl - 1) throw EnvError(fmt::format("compile worker {}: the cubin was cut short", exe));
  r.cubin = reply.substr(nl + 1, bytes);
  if (r.nvrtc_result < 0) throw EnvError(fmt::format("compile worker {}: {}", exe, r.log));
  if (!r.warning.empty()) {
    static std::atomic<bool> said{false};  // once per process: every compile would say the same
    if (!said.exchange(true)) spdlog::warn("{}", r.warning);
  }
  return r;
}

}  // namespace kagent
