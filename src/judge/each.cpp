#include "kagent/judge/each.hpp"

#include <chrono>

#include "kagent/common/error.hpp"
#include "kagent/judge/affinity.hpp"

namespace kagent::judge {

namespace {

using Clock = std::chrono::steady_clock;

struct Pending {
  size_t index;  // into the requests
  ProblemId problem;
  std::shared_future<void> built;  // invalid: never submitted (no prebuilder)
};

bool built(const Pending& p) {
  return !p.built.valid() || p.built.wait_for(std::chrono::seconds(0)) == std::future_status::ready;
}

}  // namespace

EachOutcome evaluate_each(EvalBackend& backend, const std::vector<CandidateRequest>& requests,
                          const std::function<void(const nlohmann::json&)>& sink, Prebuilder* prebuilder) {
  EachOutcome out;
  // One worker: the policy takes any built candidate, a problem's candidates together.
  AffinityPolicy policy(1);
  std::vector<Pending> pending;
  for (size_t i = 0; i < requests.size(); ++i) {
    Pending p{i, policy.problem_id(problem_key(requests[i].problem)), {}};
    if (prebuilder) p.built = prebuilder->submit(requests[i]);
    pending.push_back(std::move(p));
  }
  while (!pending.empty()) {
    std::vector<QueuedRequest> queue;
    for (const Pending& p : pending) queue.push_back({p.index, p.problem, built(p)});
    const Pick pick = policy.pick(0, queue);
    if (!pick.index) {  // none built yet: wait for a build to end and look again
      if (prebuilder) prebuilder->wait_for_progress(std::chrono::milliseconds(50));
      continue;
    }
    const auto at = static_cast<std::ptrdiff_t>(*pick.index);
    const CandidateRequest& r = requests[pending[*pick.index].index];
    pending.erase(pending.begin() + at);
    queue.erase(queue.begin() + at);
    if (prebuilder) prebuilder->wait_for(r);
    // The likely next ones: what their kind starts ahead (a ModelNew worker, a problem not warm)
    // starts beside this one.
    std::vector<CandidateRequest> next;
    for (size_t k : policy.likely_next(0, queue)) next.push_back(requests[pending[k].index]);
    if (!next.empty()) backend.expect(next);
    const auto start = Clock::now();
    nlohmann::json record;
    bool refused = false;
    try {
      record = backend.evaluate(r);
    } catch (const InputError& e) {
      refused = true;
      record = {{"candidate", r.name.empty() ? r.file.string() : r.name}, {"error", e.what()}};
    }
    policy.evaluated(std::chrono::duration<double>(Clock::now() - start).count(), pick.warm);
    policy.set_warm(0, backend.warm());
    if (refused)
      ++out.refused;
    else
      (record.value("tier", -1) > 0 ? out.correct : out.failed) += 1;
    sink(record);
  }
  return out;
}

}  // namespace kagent::judge
