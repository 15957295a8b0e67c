#include "kagent/judge/affinity.hpp"

#include <algorithm>

namespace kagent::judge {

namespace {

// The weight a running mean gives its newest value is at least 1/kHorizon: it settles quickly,
// then follows the work as it drifts (other problems, other measurement presets).
constexpr long kHorizon = 64;

void add_to_mean(double* mean, long* n, double value) {
  *n = std::min(*n + 1, kHorizon);
  *mean += (value - *mean) / static_cast<double>(*n);
}

}  // namespace

const char* pick_rule_name(PickRule rule) {
  switch (rule) {
    case PickRule::aged:
      return "aged";
    case PickRule::warm:
      return "warm";
    case PickRule::cold:
      return "cold";
    case PickRule::steal:
      return "steal";
    case PickRule::none:
      break;
  }
  return "none";
}

AffinityPolicy::AffinityPolicy(size_t workers, AffinityOptions options)
    : options_(options),
      workers_(std::max<size_t>(1, workers)),
      all_s_(options.default_eval_s),
      warm_s_(options.default_eval_s),
      cold_s_(options.default_cold_start_s) {}

ProblemId AffinityPolicy::problem_id(std::string_view key) {
  auto [it, added] = ids_.try_emplace(std::string(key), static_cast<ProblemId>(ids_.size()));
  (void)added;
  return it->second;
}

void AffinityPolicy::set_warm(size_t worker, const WarmState& state) {
  Worker& w = workers_.at(worker);
  w.warm.clear();
  for (const std::string& p : state.problems) w.warm.insert(problem_id(p));
  if (!state.current.empty()) w.warm.insert(problem_id(state.current));
}

void AffinityPolicy::forget(size_t worker) {
  workers_.at(worker) = Worker{};
}

bool AffinityPolicy::warm_on(size_t worker, ProblemId problem) const {
  const Worker& w = workers_.at(worker);
  return w.current == problem || w.warm.count(problem) > 0;
}

bool AffinityPolicy::owns(size_t worker, ProblemId problem) const {
  return warm_on(worker, problem) || workers_.at(worker).announced.count(problem) > 0;
}

bool AffinityPolicy::owned_elsewhere(size_t worker, ProblemId problem) const {
  for (size_t o = 0; o < workers_.size(); ++o)
    if (o != worker && owns(o, problem)) return true;
  return false;
}

long AffinityPolicy::bypassed(uint64_t id) const {
  auto it = bypassed_.find(id);
  return it == bypassed_.end() ? 0 : it->second;
}

double AffinityPolicy::mean_eval_s() const {
  return warm_n_ > 0 ? warm_s_ : all_s_;
}

double AffinityPolicy::cold_start_s() const {
  return cold_s_;
}

void AffinityPolicy::evaluated(double seconds, bool warm) {
  if (warm) {
    add_to_mean(&warm_s_, &warm_n_, seconds);
  } else if (warm_n_ > 0) {
    // What the start cost beyond a warm evaluation. Before any warm evaluation there is nothing to
    // subtract (every one so far paid a start): the default stands.
    add_to_mean(&cold_s_, &cold_n_, std::max(0.0, seconds - warm_s_));
  }
  add_to_mean(&all_s_, &all_n_, seconds);
}

std::string AffinityPolicy::owners_elsewhere(size_t worker, ProblemId problem) const {
  std::string mask(workers_.size(), '0');
  for (size_t o = 0; o < workers_.size(); ++o)
    if (o != worker && owns(o, problem)) mask[o] = '1';
  return mask;
}

Pick AffinityPolicy::take(size_t worker, const std::vector<QueuedRequest>& queue, size_t index, PickRule rule) {
  for (size_t i = 0; i < index; ++i)
    if (queue[i].ready) ++bypassed_[queue[i].id];
  bypassed_.erase(queue[index].id);
  Pick p;
  p.index = index;
  p.rule = rule;
  p.any_ready = true;
  p.warm = warm_on(worker, queue[index].problem);
  Worker& w = workers_.at(worker);
  w.current = queue[index].problem;
  w.announced.erase(queue[index].problem);
  return p;
}

Pick AffinityPolicy::pick(size_t worker, const std::vector<QueuedRequest>& queue) {
  const size_t n = std::min(queue.size(), options_.window);
  Pick none;
  for (size_t i = 0; i < n; ++i) {
    if (!queue[i].ready) continue;
    none.any_ready = true;
    if (bypassed(queue[i].id) >= options_.max_bypass) return take(worker, queue, i, PickRule::aged);
  }
  if (!none.any_ready) return none;
  for (size_t i = 0; i < n; ++i)
    if (queue[i].ready && warm_on(worker, queue[i].problem)) return take(worker, queue, i, PickRule::warm);
  // Owned elsewhere, by problem: asked once per problem rather than per request.
  std::unordered_map<ProblemId, bool> elsewhere;
  auto is_elsewhere = [&](ProblemId p) {
    auto [it, added] = elsewhere.try_emplace(p, false);
    if (added) it->second = owned_elsewhere(worker, p);
    return it->second;
  };
  for (size_t i = 0; i < n; ++i)
    if (queue[i].ready && !is_elsewhere(queue[i].problem)) return take(worker, queue, i, PickRule::cold);
  // Every ready request is owned elsewhere. The owners of a problem take its requests together with
  // the rest of theirs: their queued work is every queued request of a problem any of them owns,
  // shared among them. Asked once per set of owners (there are about as many as workers).
  std::unordered_map<ProblemId, std::string> owners;
  auto owners_of = [&](ProblemId p) -> const std::string& {
    auto [it, added] = owners.try_emplace(p);
    if (added) it->second = owners_elsewhere(worker, p);
    return it->second;
  };
  std::unordered_map<std::string, bool> worth;
  for (size_t i = 0; i < n; ++i) {
    if (!queue[i].ready) continue;
    const std::string& mask = owners_of(queue[i].problem);
    auto [it, added] = worth.try_emplace(mask, false);
    if (added) {
      size_t queued = 0;
      for (size_t k = 0; k < n; ++k) {
        const std::string& other = owners_of(queue[k].problem);
        for (size_t o = 0; o < mask.size(); ++o)
          if (mask[o] == '1' && other[o] == '1') {
            ++queued;
            break;
          }
      }
      const auto count = static_cast<double>(std::count(mask.begin(), mask.end(), '1'));
      it->second = static_cast<double>(queued) * mean_eval_s() / std::max(1.0, count) > cold_start_s();
    }
    if (it->second) return take(worker, queue, i, PickRule::steal);
  }
  return none;
}

std::vector<size_t> AffinityPolicy::likely_next(size_t worker, const std::vector<QueuedRequest>& queue) {
  const size_t n = std::min(queue.size(), options_.window);
  // The order rules 1-3 would hand the queue to this worker alone: the ready requests first, then
  // those still building; within each, the aged, then those warm on it, then the cold ones a
  // problem at a time (once it takes a problem's first request, the rest are warm).
  std::vector<size_t> order;
  std::unordered_map<ProblemId, bool> elsewhere;
  auto is_elsewhere = [&](ProblemId p) {
    auto [it, added] = elsewhere.try_emplace(p, false);
    if (added) it->second = owned_elsewhere(worker, p);
    return it->second;
  };
  for (bool ready : {true, false}) {
    std::vector<size_t> aged, warm;
    std::vector<ProblemId> cold_order;
    std::unordered_map<ProblemId, std::vector<size_t>> cold;
    for (size_t i = 0; i < n; ++i) {
      const QueuedRequest& q = queue[i];
      if (q.ready != ready) continue;
      if (bypassed(q.id) >= options_.max_bypass) {
        aged.push_back(i);
      } else if (warm_on(worker, q.problem)) {
        warm.push_back(i);
      } else if (!is_elsewhere(q.problem)) {
        auto [it, added] = cold.try_emplace(q.problem);
        if (added) cold_order.push_back(q.problem);
        it->second.push_back(i);
      }
    }
    order.insert(order.end(), aged.begin(), aged.end());
    order.insert(order.end(), warm.begin(), warm.end());
    for (ProblemId p : cold_order) order.insert(order.end(), cold[p].begin(), cold[p].end());
  }

  // The next problems after the one it evaluates, in the order it reaches them; those not warm on
  // it are announced (the backend starts them ahead) and so owned. Only the next few: a warm
  // problem with work queued counts among them, so announcing never pushes out of the backend a
  // problem the worker is about to use.
  Worker& w = workers_.at(worker);
  w.announced.clear();
  std::vector<ProblemId> upcoming;
  for (size_t i : order) {
    if (upcoming.size() >= options_.announce_problems) break;
    const ProblemId p = queue[i].problem;
    if (w.current == p || std::find(upcoming.begin(), upcoming.end(), p) != upcoming.end()) continue;
    upcoming.push_back(p);
    if (!warm_on(worker, p)) w.announced.insert(p);
  }
  // A backend starts the problem of every request it hears of: only those warm on it or announced
  // are named, the first expect_ahead in order, then the first request of each problem announced.
  std::vector<size_t> next;
  auto named = [&](size_t i) { return warm_on(worker, queue[i].problem) || w.announced.count(queue[i].problem) > 0; };
  for (size_t i : order)
    if (next.size() < options_.expect_ahead && named(i)) next.push_back(i);
  for (ProblemId p : upcoming) {
    if (w.announced.count(p) == 0) continue;
    bool listed = false;
    for (size_t i : next) listed = listed || queue[i].problem == p;
    if (listed) continue;
    for (size_t i : order)
      if (queue[i].problem == p) {
        next.push_back(i);
        break;
      }
  }
  return next;
}

}  // namespace kagent::judge
