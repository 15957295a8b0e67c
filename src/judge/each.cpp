#include "kagent/judge/each.hpp"

#include "kagent/common/error.hpp"

namespace kagent::judge {

EachOutcome evaluate_each(EvalBackend& backend, const std::vector<CandidateRequest>& requests,
                          const std::function<void(const nlohmann::json&)>& sink, Prebuilder* prebuilder) {
  EachOutcome out;
  std::vector<const CandidateRequest*> pending;
  for (const CandidateRequest& r : requests) {
    if (prebuilder) prebuilder->submit(r);
    pending.push_back(&r);
  }
  while (!pending.empty()) {
    // The first candidate whose build is over: one built out of turn does not wait for a slower one.
    const size_t next = prebuilder ? prebuilder->first_ready(pending) : 0;
    const CandidateRequest& r = *pending[next];
    pending.erase(pending.begin() + static_cast<std::ptrdiff_t>(next));
    if (prebuilder) prebuilder->wait_for(r);
    // The likely next ones: what their kind starts ahead (a ModelNew worker) starts beside this one.
    if (!pending.empty()) backend.expect(likely_next(pending, prebuilder));
    nlohmann::json record;
    try {
      record = backend.evaluate(r);
    } catch (const InputError& e) {
      ++out.refused;
      sink({{"candidate", r.name.empty() ? r.file.string() : r.name}, {"error", e.what()}});
      continue;
    }
    (record.value("tier", -1) > 0 ? out.correct : out.failed) += 1;
    sink(record);
  }
  return out;
}

}  // namespace kagent::judge
