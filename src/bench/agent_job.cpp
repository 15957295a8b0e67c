// --agent: `kagent optimize` on each problem, as a child process in its own run folder
// (runs/<level>/<name>), so a crash or a hang of one run cannot take the batch with it. A run
// that was cut off (the batch killed, or interrupted) is continued with --resume next time.
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstring>
#include <limits>
#include <thread>

#include <fmt/format.h>

#include "kagent/agent/result_file.hpp"
#include "kagent/bench/jobs.hpp"
#include "kagent/common/error.hpp"
#include "kagent/common/files.hpp"
#include "kagent/sandbox/spawn.hpp"

namespace kagent::bench {

namespace fs = std::filesystem;

namespace {

struct ChildExit {
  bool timed_out = false, interrupted = false;
  int exit_code = -1;  // when it exited
  int signal = 0;      // when a signal ended it
};

// Starts argv with stdout and stderr appended to `log`, under the agent-run policy: its own
// process group, default signals, and death with this worker thread (a killed batch leaves no
// orphan agent writing into a run folder that a resumed batch is about to continue).
pid_t spawn_logged(const std::vector<std::string>& argv, const fs::path& log) {
  int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) throw EnvError(fmt::format("{}: cannot open ({})", log.string(), std::strerror(errno)));
  try {
    pid_t pid = sandbox::spawn(sandbox::agent_run_policy(), {argv, {}, -1, fd, fd});
    ::close(fd);
    return pid;
  } catch (...) {
    ::close(fd);
    throw;
  }
}

// Waits for the child; on `stop` it gets SIGINT (the agent stops cleanly, keeping its transcript)
// and 30 s later SIGKILL; past `timeout`, SIGKILL.
ChildExit wait_child(pid_t pid, std::chrono::seconds timeout, const std::atomic<bool>* stop) {
  using Clock = std::chrono::steady_clock;
  const auto t0 = Clock::now();
  std::optional<Clock::time_point> interrupted_at;
  ChildExit e;
  for (;;) {
    int status = 0;
    pid_t r = ::waitpid(pid, &status, WNOHANG);
    if (r == pid) {
      if (WIFEXITED(status)) e.exit_code = WEXITSTATUS(status);
      if (WIFSIGNALED(status)) e.signal = WTERMSIG(status);
      return e;
    }
    if (r < 0 && errno != EINTR) return e;
    const auto now = Clock::now();
    if (stop && stop->load() && !interrupted_at) {
      e.interrupted = true;
      interrupted_at = now;
      ::kill(-pid, SIGINT);
    }
    if ((interrupted_at && now - *interrupted_at > std::chrono::seconds(30)) ||
        (timeout.count() > 0 && now - t0 > timeout)) {
      e.timed_out = !interrupted_at;
      ::kill(-pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      e.signal = SIGKILL;
      return e;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
}

std::string tail(const fs::path& log, size_t bytes = 1500) {
  std::error_code ec;
  if (!fs::is_regular_file(log, ec)) return "";
  std::string text = read_text_file(log);
  return text.size() > bytes ? "..." + text.substr(text.size() - bytes) : text;
}

class AgentJob : public ProblemJob {
 public:
  AgentJob(AgentJobOptions o, int gpu) : opt_(std::move(o)), gpu_(gpu) {}

  std::optional<report::ResultRecord> run(const Problem& p) override {
    const fs::path dir = opt_.runs_dir / p.level / p.name;
    std::error_code ec;
    // Finished earlier (the batch was killed before it wrote the record): read it back.
    if (fs::is_regular_file(dir / "result.json", ec)) return record_from_run(p, dir);
    fs::create_directories(dir, ec);
    if (ec) throw EnvError(fmt::format("{}: cannot create the run folder ({})", dir.string(), ec.message()));
    agent::OptimizeRunOptions o = opt_.options;
    if (fs::is_regular_file(dir / "transcript.jsonl", ec)) {
      o.resume = dir.string();
    } else {
      o.op = p.path.string();
      o.out = dir.string();
    }
    o.gpu = gpu_;
    o.without_gpu = true;  // a batch on a machine without a GPU still records what the model wrote
    const fs::path options = dir / "optimize-options.json";
    write_file_atomic(options, nlohmann::json(o).dump(2) + "\n");
    const std::vector<std::string> argv = {opt_.kagent, "optimize", "--options", options.string(), "--quiet"};
    const fs::path log = dir / "optimize.log";
    write_file_atomic(dir / "bench-command.txt", fmt::format("{}\n", fmt::join(argv, " ")));
    ChildExit e = wait_child(spawn_logged(argv, log), opt_.timeout, opt_.stop);

    if (e.exit_code == 0 || e.exit_code == 1) {
      if (fs::is_regular_file(dir / "result.json", ec)) return record_from_run(p, dir);
    }
    if (e.interrupted) return std::nullopt;  // resumed by the next batch
    report::ResultRecord r = error_record(p, "", gpu_);
    r.run_dir = dir.string();
    if (e.timed_out) {
      r.status = "timeout";
      r.error = fmt::format("the agent run passed the {} s limit (--timeout); its log: {}", opt_.timeout.count(),
                            log.string());
    } else if (e.exit_code == 3) {
      throw EnvError(fmt::format("kagent optimize (exit 3): {}", tail(log)));
    } else if (e.signal != 0) {
      r.status = "crash";
      r.error =
          fmt::format("kagent optimize was killed by signal {} ({}); {}", e.signal, strsignal(e.signal), tail(log));
    } else {
      r.error = fmt::format("kagent optimize exited with {}: {}", e.exit_code, tail(log));
    }
    return r;
  }

 private:
  AgentJobOptions opt_;
  int gpu_;
};

}  // namespace

std::unique_ptr<ProblemJob> make_agent_job(const AgentJobOptions& options, int gpu) {
  return std::make_unique<AgentJob>(options, gpu);
}

report::ResultRecord record_from_run(const Problem& p, const fs::path& dir) {
  report::ResultRecord r;
  r.problem = p.id;
  r.level = p.level;
  r.run_dir = dir.string();
  // Bounded like every reader of text kagent did not write in this process (result_file.hpp).
  // result.json holds the record whole: the best candidate's score and the best speedup by turn.
  const agent::ResultFile result = agent::read_result_file(dir / "result.json");
  r.wall_s = result.wall_s;
  r.best_by_turn = result.best_by_turn;
  if (result.best && result.best->score.correct()) {
    r.status = "correct";
    r.score = result.best->score;
    r.candidate = (dir / result.best->best_file()).string();
  } else if (result.evaluations > 0) {
    r.status = "incorrect";
    r.error =
        fmt::format("no correct candidate in {} evaluations (stopped: {})", result.evaluations, result.stop_reason);
  } else {
    r.status = "unsolved";
    r.error = fmt::format("the agent evaluated no candidate (stopped: {})", result.stop_reason);
  }
  // What the run was judged under, where the best's score does not say (no correct candidate, or
  // a version-1 result.json).
  if (r.score.precision.empty()) r.score.precision = result.precision;
  if (!r.score.tolerance) r.score.tolerance = result.tolerance;
  return r;
}

}  // namespace kagent::bench
