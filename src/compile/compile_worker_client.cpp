#include "kagent/compile/compile_worker_client.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <charconv>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <optional>

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <nlohmann/json.hpp>

#include "kagent/common/error.hpp"
#include "kagent/sandbox/policy.hpp"
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

// Writes the request while reading the reply, so that neither side can block the other. False
// when the deadline came first.
bool exchange(int to, int from, int err, const std::string& request, std::string& out, std::string& err_text,
              Clock::time_point deadline) {
  size_t written = 0;
  fcntl(to, F_SETFL, fcntl(to, F_GETFL) | O_NONBLOCK);
  char buf[65536];
  bool out_open = true, err_open = true;
  while (out_open || err_open) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) {
      if (to >= 0) close(to);
      return false;
    }
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
  return true;
}

}  // namespace

std::string compile_worker_path() {
  if (const char* w = std::getenv("KAGENT_COMPILE_WORKER"); w != nullptr && *w != '\0') return w;
  std::string beside = (std::filesystem::path(self_dir()) / "kagent-compile").string();
  if (access(beside.c_str(), X_OK) == 0) return beside;
  return KAGENT_COMPILE_WORKER_DEFAULT;
}

CompileLimits compile_limits_from_environment() {
  CompileLimits l;
  auto read = [](const char* name, uint64_t lo, uint64_t hi, const char* unit) -> std::optional<uint64_t> {
    const char* v = std::getenv(name);
    if (v == nullptr || *v == '\0') return std::nullopt;
    uint64_t n = 0;
    const char* end = v + std::strlen(v);
    auto [ptr, ec] = std::from_chars(v, end, n);
    if (ec != std::errc() || ptr != end || n < lo || n > hi)
      throw InputError(fmt::format("{}='{}': expected a whole number of {} from {} to {}", name, v, unit, lo, hi));
    return n;
  };
  if (auto s = read("KAGENT_COMPILE_TIMEOUT", 1, 86400, "seconds")) l.seconds = std::chrono::seconds(*s);
  if (auto m = read("KAGENT_COMPILE_MEMORY", 256, uint64_t{1} << 20, "MiB")) l.memory_bytes = *m << 20;
  return l;
}

namespace {

std::string signal_name(int sig) {
  const char* abbrev = sigabbrev_np(sig);
  return abbrev != nullptr ? fmt::format("SIG{}", abbrev) : fmt::format("signal {}", sig);
}

// Why a worker that ended by `sig` did not finish, in the candidate's terms.
std::string killed_text(const std::string& name, int sig, const CompileLimits& limits) {
  const uint64_t mib = limits.memory_bytes >> 20;
  if (sig == SIGXCPU)
    return fmt::format(
        "{}: the compile was stopped after {} s of CPU time (limit): NVRTC had not finished (a macro or "
        "template that expands without bound?); KAGENT_COMPILE_TIMEOUT sets the limit",
        name, limits.seconds.count());
  return fmt::format(
      "{}: the compile crashed: NVRTC was killed by {} (out of memory at the limit of {} MiB, if a macro or "
      "template expands without bound; KAGENT_COMPILE_MEMORY sets the limit)",
      name, signal_name(sig), mib);
}

}  // namespace

WorkerResult run_compile_worker(const WorkerCompile& request) {
  const std::string exe = compile_worker_path();
  const CompileLimits& limits = request.limits;
  std::vector<std::string> argv = {exe};
  for (const auto& v : request.visible) argv.insert(argv.end(), {"--visible", v});
  nlohmann::json req = {{"name", request.name}, {"source", request.source}, {"options", request.options}};
  const std::string body = req.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);

  Pipe in, out, err;
  // The CPU-time limit is the wall-clock one: a compile never needs more CPU than it has time.
  pid_t pid = sandbox::spawn(sandbox::compile_worker_policy(request.visible, static_cast<rlim_t>(limits.memory_bytes),
                                                            static_cast<rlim_t>(limits.seconds.count())),
                             {argv, {}, in.fd[0], out.fd[1], err.fd[1]});
  in.close_end(0);
  out.close_end(1);
  err.close_end(1);
  // A worker that died with its stdin open must turn into an error here, not a SIGPIPE.
  struct sigaction ignore {
  }, old{};
  ignore.sa_handler = SIG_IGN;
  sigaction(SIGPIPE, &ignore, &old);
  std::string reply, err_text;
  bool timed_out = false;
  std::string failure;
  try {
    int to = in.fd[1];
    in.fd[1] = -1;  // exchange() closes it
    timed_out = !exchange(to, out.fd[0], err.fd[0], body, reply, err_text, Clock::now() + limits.seconds);
  } catch (const std::exception& e) {
    failure = e.what();
  }
  if (timed_out || !failure.empty()) kill(-pid, SIGKILL);
  sigaction(SIGPIPE, &old, nullptr);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (!failure.empty()) throw EnvError(fmt::format("{} ({}): {}", failure, exe, err_text));
  WorkerResult r;
  if (timed_out) {
    r.stopped = fmt::format(
        "{}: the compile was stopped after {} s (limit): NVRTC had not finished (a macro or template that "
        "expands without bound?); KAGENT_COMPILE_TIMEOUT sets the limit",
        request.name, limits.seconds.count());
    return r;
  }
  // Killed (its CPU or memory limit, a crash inside NVRTC): the source did it, whatever came out.
  if (WIFSIGNALED(status)) {
    r.stopped = killed_text(request.name, WTERMSIG(status), limits);
    return r;
  }

  size_t nl = reply.find('\n');
  nlohmann::json head = nlohmann::json::parse(reply.substr(0, nl), nullptr, false);
  if (nl == std::string::npos || head.is_discarded() || !head.is_object()) {
    std::string how = fmt::format("exit {}", WEXITSTATUS(status));
    if (WEXITSTATUS(status) == sandbox::kExecFailedExit) how += ": could not execute it";
    if (WEXITSTATUS(status) == sandbox::kSetupFailedExit) how += ": sandbox setup failed";
    throw EnvError(fmt::format("compile worker {} gave no reply ({}){}", exe, how,
                               err_text.empty() ? "" : ": " + err_text.substr(0, 2000)));
  }
  r.nvrtc_result = head.value("result", -1);
  r.error = head.value("error", std::string());
  r.log = head.value("log", std::string());
  r.isolation = head.value("isolation", std::string());
  r.warning = head.value("warning", std::string());
  if (head.value("refused", false)) {  // the source is too large for a request
    r.stopped = fmt::format("{}: {}", request.name, r.log);
    return r;
  }
  size_t bytes = head.value("cubin_bytes", size_t{0});
  if (bytes > reply.size() - nl - 1) throw EnvError(fmt::format("compile worker {}: the cubin was cut short", exe));
  r.cubin = reply.substr(nl + 1, bytes);
  if (r.nvrtc_result < 0) throw EnvError(fmt::format("compile worker {}: {}", exe, r.log));
  // NVRTC ran out of memory at the worker's limit and said so itself ("catastrophic error: out of
  // memory"): the same failure as a kill there, with NVRTC's own words on where.
  if (r.nvrtc_result != 0 && r.log.find("catastrophic error: out of memory") != std::string::npos)
    r.stopped = fmt::format(
        "{}: the compile ran out of memory at the limit of {} MiB (a macro or template that expands without "
        "bound?); KAGENT_COMPILE_MEMORY sets the limit",
        request.name, limits.memory_bytes >> 20);
  if (!r.warning.empty()) {
    static std::atomic<bool> said{false};  // once per process: every compile would say the same
    if (!said.exchange(true)) spdlog::warn("{}", r.warning);
  }
  return r;
}

}  // namespace kagent
