#include "kagent/judge/each.hpp"

#include "kagent/common/error.hpp"

namespace kagent::judge {

EachOutcome evaluate_each(EvalBackend& backend, const std::vector<CandidateRequest>& requests,
                          const std::function<void(const nlohmann::json&)>& sink) {
  EachOutcome out;
  for (const CandidateRequest& r : requests) {
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
