#pragma once
// The orchestrator's handle on one child process that speaks JSON lines: kagent-runner (one per
// GPU), the reference server (python3 -m kagent_ref) and a ModelNew worker. Starts it sandboxed
// (ChildOptions::launch: the Python children in their jails), sends JSON-line requests, enforces a
// wall-clock limit per request, and restarts it after a hang, a crash or a sticky CUDA error.
// kagent itself never creates a CUDA context.
//
// Protocol (JSON lines; the runner's names, the Python children's the same with their own hello,
// tools/kagent_wire/jsonlines.py):
//   runner -> stdout, once at start: {"hello": "kagent-runner", "version": "...", "pid": N,
//                                      "sandbox": {"no_new_privs": bool, "netns": bool, "warning": "..."}}
//   kagent -> stdin:  {"id": N, "cmd": "...", ...}      one line per request
//   runner -> stdout: {"id": N, "ok": bool, ...}        one line per request
//   runner -> stderr: "kagent-phase: <text>" before each step that can hang or fault (so a
//                     timeout or crash can name the launch), and free-form log lines.
//   runner -> stdout: {"id": N, "need": "...", ...}  in the middle of request N, when the runner
//                     needs something only kagent has (a PyTorch reference's trial tensors);
//   kagent -> stdin:  {"id": N, ...}                  the answer, then the runner goes on.
//   A reply may carry "restart": true (sticky CUDA error): the runner exits after replying and
//   the next request starts a fresh one.
#include <sys/types.h>

#include <chrono>
#include <deque>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "kagent/sandbox/policy.hpp"
#include "kagent/sandbox/spawn.hpp"

namespace kagent {

struct ChildOptions {
  std::string runner_path;                         // the kagent-runner executable
  std::vector<std::string> args;                   // extra arguments for it
  int gpu = 0;                                     // passed as KAGENT_GPU in its environment
  std::chrono::milliseconds start_timeout{30000};  // until the hello line
  bool sandbox = true;                             // false: kagent's environment, no limits (debugging)
  kagent::sandbox::SandboxPolicy policy =
      kagent::sandbox::runner_policy();      // what it may see and do (sandbox/policy.hpp)
  std::vector<std::string> env;              // extra "NAME=value" entries for its environment
  std::string hello_name = "kagent-runner";  // the "hello" value its first line must carry
  // Starts the child instead of sandbox::spawn(policy, ...): the Python children start in a jail of
  // their own (sandbox/jail.hpp, reference/python_child.hpp). May set *warning when the sandbox is
  // weaker than documented; sandbox_warning() reports it.
  std::function<pid_t(const sandbox::SpawnRequest&, std::string* warning)> launch;
};

struct ChildReply {
  enum class Failure { none, timeout, crashed, protocol, start };
  Failure failure = Failure::none;
  nlohmann::json body;      // the reply line (when failure == none)
  std::string message;      // for failures: what happened, naming the last phase
  std::string last_phase;   // the last "kagent-phase:" text seen during this request
  std::string stderr_tail;  // the runner's last stderr lines (not phases), for diagnostics
  bool ok() const { return failure == Failure::none; }
};

// Answers a runner's "need" message; the answer's "id" is filled in by the client. Its time does
// not count against the request's timeout (it has limits of its own).
using NeedHandler = std::function<nlohmann::json(const nlohmann::json& need)>;

// Not thread-safe: one client per GPU worker. The runner is started with PR_SET_PDEATHSIG, which
// fires when the *thread* that started it exits: use a client from a thread that outlives it.
class ChildClient {
 public:
  explicit ChildClient(ChildOptions options);
  ~ChildClient();  // stops the runner (closes stdin, then SIGKILL after a grace period)
  ChildClient(const ChildClient&) = delete;
  ChildClient& operator=(const ChildClient&) = delete;

  // Sends one request (an "id" is added) and waits at most `timeout` for its reply. Starts the
  // runner first if none is running. On timeout the runner is killed (its whole process group)
  // and the failure names the last phase; on a crash, the signal or exit code and the stderr
  // tail. After any failure, or a reply with "restart": true, the next request starts afresh.
  // A "need" message in between is answered by `on_need` (a protocol failure without one).
  ChildReply request(nlohmann::json req, std::chrono::milliseconds timeout, const NeedHandler& on_need = {});

  // Ends the child at once (SIGKILL to its process group, reaped): for a child whose state is of
  // no further use, which would otherwise get a grace period to exit on its own.
  void end_now() { stop(true); }
  bool running() const { return pid_ > 0; }
  // Whether the child started is still there (not exited or killed since): a child started ahead of
  // its use may have died meanwhile, which must not be blamed on what its next request carries.
  // One that is gone is reaped, and the next request starts afresh.
  bool alive();
  pid_t pid() const { return pid_; }
  int starts() const { return starts_; }                  // how many runners were started so far
  const nlohmann::json& hello() const { return hello_; }  // the last hello line
  const std::string& sandbox_warning() const { return sandbox_warning_; }
  const ChildOptions& options() const { return opt_; }

 private:
  bool start(ChildReply& failure);
  void stop(bool kill_now);
  // Reads from stdout/stderr until a full stdout line arrives or the deadline passes.
  bool read_line(std::string& line, std::chrono::steady_clock::time_point deadline, ChildReply& r);
  void take_stderr(ChildReply* r);

  ChildOptions opt_;
  pid_t pid_ = -1;
  int to_child_ = -1, from_child_ = -1, err_child_ = -1;
  std::string out_buf_, err_buf_;
  std::deque<std::string> err_tail_;
  nlohmann::json hello_;
  std::string sandbox_warning_;
  int starts_ = 0;
  long next_id_ = 1;
  bool restart_pending_ = false;
};

}  // namespace kagent
