#pragma once
// PyTorch problems kept ready on one GPU. A problem's start is seconds: its reference server's jail,
// Python and torch (about 3 s), its CUDA context, the problem file imported, its model built and its
// first reference run (the kernels it loads, the libraries' handles), its baselines. A stream of
// candidates that mixes problems (an RL step: dozens of problems at once) would pay that on every
// switch; here each problem's server stays up after its turn, holding its model and context but not
// a trial's tensors (released when it goes idle), and a switch back to it costs a request or two.
//
// Bounded: at most WarmLimits::max_problems per GPU, and the idle ones' GPU and host memory within
// WarmLimits::memory_share; beyond, the least recently used idle problem is let go (its server
// killed). An evaluation that runs out of GPU memory lets every idle problem go and runs again
// (Evaluator::evaluate), so a mix that does not fit costs restarts, never a verdict.
//
// A problem announced before its turn (Evaluator::expect) is started ahead on one of the pool's
// helper threads: its server and CUDA context beside the measurement under way, then its first run
// and baselines under the GPU lock (gpu_lock.hpp), so no kernel of it runs during another's timing.
// A child started on a thread is tied to it (PR_SET_PDEATHSIG), so the threads live as long as the pool.
//
// Spares: once a second problem has been started (the worker serves a mix), WarmLimits::spares
// servers are kept ready on the helper threads, started before their problem is known; a problem's
// start, ahead or in turn, takes one when there is one, so the jail, Python, torch, the context and
// the libraries' first kernels are off its path. A spare runs no problem code until it is given its
// one problem (RefServer::adopt).
//
// One server per problem file: it runs that file's code, which must not reach another problem's
// reference. Candidates never reach a server: they get a trial's tensors through the runner.
#include <sys/types.h>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "kagent/eval/warm_limits.hpp"
#include "kagent/protocol/output_rules.hpp"
#include "kagent/protocol/protocol.hpp"
#include "kagent/protocol/stats.hpp"
#include "kagent/reference/ref_server.hpp"
#include "kagent/spec/op.hpp"

namespace kagent {

// A PyTorch reference loaded in a server: the op with its signature filled in and the eager/compile
// baselines of the evaluation that asked for them.
struct PyTorchReference {
  Op op;
  RefSignature signature;
  std::optional<RefBaselines> baselines;  // measured (or read from the cache) on the first timed evaluation
  uint64_t seed = 0;                      // the model's weights were drawn under it (ModelNew is built under it too)
  // The server's precision figures (each output's own error against fp64, the forbidden precisions'),
  // once asked for (Evaluator::reference_precision); figures_asked: asked, whatever the answer.
  std::optional<PrecisionFigures> figures;
  bool figures_asked = false;
  // The reference's library calls timed alone (Evaluator::library_times), once asked for.
  std::optional<RefLibraryTimes> library_times;
};

// What a problem's start needs besides the op (its file and precision).
struct WarmStart {
  Op op;
  // Also measure (or read from the cache) the eager and torch.compile baselines under this stop
  // rule: a timed evaluation needs them. nullopt: not now.
  std::optional<StopRule> baselines;
  bool ahead = false;                 // on a helper thread, beside another's measurement
  std::filesystem::path gpu_lock;     // the GPU's lock (gpu_lock.hpp): taken for the GPU work of a start ahead
  std::function<void()> before_load;  // in turn: what the GPU must let go of first (the runner's kept buffers)
};

// One problem file's server and what it loaded.
struct WarmEntry {
  virtual ~WarmEntry() = default;     // tests count theirs
  std::string key;                    // the file, absolute and normal (judge::problem_key)
  std::unique_ptr<RefServer> server;  // null only in tests of the pool
  PyTorchReference ref;
  std::string loaded;  // precision loaded ("" none)
  // Baselines by the stop rule they were measured under (the baseline cache's key has it too).
  std::map<std::string, RefBaselines> baselines;
  // As measured when it last went idle: NVML's figure for its processes (0 where NVML cannot say),
  // what torch still reserved, and its private host memory.
  uint64_t gpu_bytes = 0, reserved_bytes = 0, host_bytes = 0;
  std::chrono::steady_clock::time_point used;
  bool ahead_unused = false;  // started ahead and not yet used: a later start ahead does not let it go
};

// The key a problem is kept under: its file, absolute and normal.
std::string warm_key(const std::filesystem::path& problem);

// The key of a stop rule in WarmEntry::baselines.
std::string baselines_key(const StopRule& rule);

// How the pool starts, loads, idles and measures a problem's server. Defaults: the reference
// server's (RefServer); tests give their own.
struct WarmHooks {
  // A new entry for the problem: its server started (for one started ahead, also its CUDA context).
  std::function<std::unique_ptr<WarmEntry>(const WarmStart&)> spawn;
  // The op loaded at its precision (and the baselines WarmStart asks for), into the entry.
  std::function<void(WarmEntry&, const WarmStart&)> load;
  // The entry goes idle: its trial tensors let go; what torch still reserves.
  std::function<uint64_t(WarmEntry&)> idle;
  // The GPU bytes by NVML and the private host bytes of the server whose process is `pid`, and
  // its descendants, now (0 where they cannot be told).
  std::function<std::pair<uint64_t, uint64_t>(pid_t pid)> measure;
  // Whether its server still runs.
  std::function<bool(WarmEntry&)> alive;
  // A spare: an entry whose server is started and ready for a problem not known yet (its libraries'
  // first kernels run under the GPU lock at `gpu_lock`). Empty: no spares.
  std::function<std::unique_ptr<WarmEntry>(const std::filesystem::path& gpu_lock)> spare;
  // A spare given the problem of `s` (before its load).
  std::function<void(WarmEntry&, const WarmStart&)> adopt;
};

class WarmProblems {
 public:
  // Touches no GPU and starts nothing but its helper threads. `hooks` left empty: the reference
  // server's.
  WarmProblems(int gpu, WarmLimits limits, WarmHooks hooks = {});
  ~WarmProblems();  // waits for the starts under way, then lets every problem go
  WarmProblems(const WarmProblems&) = delete;
  WarmProblems& operator=(const WarmProblems&) = delete;

  static constexpr size_t kThreads = 2;  // problems started ahead at once

  // The GPU's UUID (for NVML's per-process memory) and memory size: the memory bound needs them.
  void set_device(const std::string& uuid, uint64_t gpu_bytes);
  const WarmLimits& limits() const { return limits_; }

  struct Use {
    WarmEntry* entry;
    // "current" (the last one used), "warm" (idle, kept), "started_ahead" (started on a helper
    // thread before its turn), "started" (in turn, now)
    std::string state;
    double waited_s = 0;  // for a start ahead still under way, or a start now: the time it took here
  };
  // The problem of `s.op` loaded at its precision, with the baselines `s` asks for, made the current
  // one (the previous current one goes idle). Throws what the server throws (InputError for the
  // problem, EnvError, GpuBusyError); the entry is then let go.
  Use use(const WarmStart& s);
  // Starts the problem on a helper thread unless it is warm (then it counts as used now: announced,
  // it is likely next) or under way, or there is no room (the most problems and no idle one to let
  // go). True when a start was queued.
  bool start_ahead(WarmStart s);
  // Whether the problem is warm or being started.
  bool holds(const std::string& key) const;
  // Lets every problem but the current one go (an evaluation ran out of GPU memory): how many.
  size_t evict_idle();
  // Lets the current problem go (its server failed, or may have).
  void drop_current();
  WarmEntry* current();
  // The processes of every server (for telling an out-of-memory apart).
  std::vector<pid_t> pids() const;
  WarmStats stats() const;

 private:
  void run();
  // Let go of idle problems beyond the bounds, least recently used first; `room` more to come.
  // The entries let go are moved into `gone` and destroyed by the caller outside the lock.
  void enforce_locked(size_t room, std::vector<std::unique_ptr<WarmEntry>>& gone);
  std::unique_ptr<WarmEntry> start_now(const WarmStart& s);
  // A ready spare (its server alive), or null; queues the next spare's start.
  std::unique_ptr<WarmEntry> take_spare();
  // Queues spare starts up to WarmLimits::spares once the pool has seen two problems.
  void refill_spares_locked();
  // Measures the idle problem `key` (its server's process `pid`) on a helper thread, then applies
  // the bounds with what it found.
  void measure_later_locked(const std::string& key, pid_t pid);
  uint64_t host_share_bytes() const;

  int gpu_;
  WarmLimits limits_;
  WarmHooks hooks_;
  mutable std::mutex mu_;
  std::condition_variable cv_;       // a job queued, or closing
  std::condition_variable done_cv_;  // a start ahead ended
  std::map<std::string, std::unique_ptr<WarmEntry>> warm_;
  std::set<std::string> starting_;                   // queued or under way on a helper thread
  std::map<std::string, std::string> ahead_failed_;  // why a start ahead failed (the turn tries again)
  std::deque<std::function<void()>> jobs_;
  std::string current_;
  std::set<std::string> pinned_;  // being switched between by use(): never let go meanwhile
  std::string uuid_;
  uint64_t gpu_total_ = 0;
  bool closing_ = false;
  WarmStats counts_;
  std::set<std::string> seen_;                      // problems ever started (two: a mix, spares kept)
  std::vector<std::unique_ptr<WarmEntry>> spares_;  // ready, oldest first
  size_t spares_starting_ = 0;
  int spare_failures_ = 0;
  std::filesystem::path gpu_lock_;  // the last start's (a spare's first kernels take it)
  std::vector<std::thread> threads_;
};

}  // namespace kagent
