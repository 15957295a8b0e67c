#pragma once
// Which queued request a GPU worker takes next, and what it announces to its backend as coming
// (EvalBackend::expect): the one scheduling policy of `kagent serve`, `kagent eval` with several
// candidates and `kagent bench --samples` (docs/serve.md, "How the queue orders work").
//
// A backend keeps several problems warm per GPU (EvalBackend::warm), and a problem started cold
// costs seconds (a reference server, the problem's model, its baselines). So a worker takes, in
// this order:
//   1. the first ready request passed over max_bypass times (aging, by count: the bound holds
//      however large a batch is, and a batch is not thrown back to arrival order by a clock);
//   2. the first ready request whose problem is warm on it;
//   3. the first ready request whose problem no other worker has warm, evaluates or announced
//      (it then owns that problem: two workers never both start one cold);
//   4. the first ready request of a problem owned elsewhere, when its owners' queued work (the
//      queued requests of every problem they own, times the mean warm evaluation, shared among
//      them) exceeds a cold start; otherwise nothing: the worker waits for a change.
// A worker never waits while a request of rule 2 or 3 is ready, and with one worker rules 1-3 take
// every ready request.
// "Ready": the request's build is over (judge/prebuild.hpp); "passed over": a later request was
// taken while it was ready, so no request waits behind more than max_bypass later ones.
//
// Bookkeeping only: no threads, clocks or locks; the caller serializes every call (its queue's
// lock). Problems are interned as small ids so a pick over a long queue compares integers.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "kagent/judge/backend.hpp"

namespace kagent::judge {

struct AffinityOptions {
  // Requests looked at from the queue's head: a pick costs O(window), and one further back waits
  // its turn in arrival order.
  size_t window = 1024;
  // Above a whole trainer step (1024), so one batch is ordered by affinity alone; a stream that
  // keeps a problem warm still lets an older request through after this many later ones.
  long max_bypass = 2048;
  double default_eval_s = 1;        // a warm evaluation, before one is measured
  double default_cold_start_s = 8;  // a problem's start, before one is measured
  size_t expect_ahead = kExpectAhead;
  // Problems announced ahead: a problem started early is ready when its turn comes, but each holds
  // a warm slot, so only the next few the worker will reach are started.
  size_t announce_problems = 2;
};

using ProblemId = uint32_t;

// A queued request as the policy sees it. The queue is given in arrival order.
struct QueuedRequest {
  uint64_t id = 0;        // the caller's, unique while the request is queued
  ProblemId problem = 0;  // AffinityPolicy::problem_id
  bool ready = true;      // its build is over
};

enum class PickRule { none, aged, warm, cold, steal };
const char* pick_rule_name(PickRule rule);

struct Pick {
  std::optional<size_t> index;  // into the queue given; nullopt: nothing to take now
  PickRule rule = PickRule::none;
  bool warm = false;  // the problem was warm on the worker when it took the request
  // With no index: whether a ready request was left for another worker (wait for a change) or
  // none is ready (wait for a build).
  bool any_ready = false;
};

class AffinityPolicy {
 public:
  explicit AffinityPolicy(size_t workers, AffinityOptions options = {});

  // The id of a problem_key (interned: the same key, the same id).
  ProblemId problem_id(std::string_view key);

  // A worker's warm problems, from its backend (WarmState::problems and ::current).
  void set_warm(size_t worker, const WarmState& state);
  // A worker whose backend was dropped, or that stopped: it holds nothing and owns nothing.
  void forget(size_t worker);

  // The request `worker` takes now (rules 1-4). A pick is a take: the requests before it that were
  // ready count one more bypass, and the worker owns the problem until its next pick.
  Pick pick(size_t worker, const std::vector<QueuedRequest>& queue);
  // What `worker` likely takes after the request it took (the queue without it), as indices into
  // `queue`: up to expect_ahead requests in the order rules 1-3 would give them, then the first
  // request of each of the next announce_problems problems (after the one it evaluates) that is not
  // warm on it. Those problems are announced: the worker owns them until its next announcement.
  std::vector<size_t> likely_next(size_t worker, const std::vector<QueuedRequest>& queue);

  // An evaluation ended after `seconds`; `warm`: Pick::warm of its request.
  void evaluated(double seconds, bool warm);

  double mean_eval_s() const;   // over warm evaluations (over all while none was warm)
  double cold_start_s() const;  // a cold evaluation's time beyond the warm mean
  long bypassed(uint64_t id) const;
  bool warm_on(size_t worker, ProblemId problem) const;  // warm, or the problem of its last pick
  bool owns(size_t worker, ProblemId problem) const;     // warm_on, or announced
  const AffinityOptions& options() const { return options_; }
  size_t workers() const { return workers_.size(); }

 private:
  struct Worker {
    std::unordered_set<ProblemId> warm, announced;
    std::optional<ProblemId> current;
  };
  bool owned_elsewhere(size_t worker, ProblemId problem) const;
  // The other workers that own `problem`: '1' at each one's place, '0' elsewhere.
  std::string owners_elsewhere(size_t worker, ProblemId problem) const;
  Pick take(size_t worker, const std::vector<QueuedRequest>& queue, size_t index, PickRule rule);

  AffinityOptions options_;
  std::vector<Worker> workers_;
  std::unordered_map<std::string, ProblemId> ids_;
  std::unordered_map<uint64_t, long> bypassed_;  // only requests passed over at least once
  // Running means (their weight capped, so they follow a drift in the work).
  double all_s_, warm_s_, cold_s_;
  long all_n_ = 0, warm_n_ = 0, cold_n_ = 0;
};

}  // namespace kagent::judge
