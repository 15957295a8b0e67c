#pragma once
// Several candidates of one problem in turn on one backend (`kagent eval A.cu B.cu ... --op X`):
// each record is handed on as it comes, and a candidate refused as bad input (a plan that does not
// fit the problem) does not stop the others.
#include <functional>
#include <vector>

#include <nlohmann/json.hpp>

#include "kagent/judge/backend.hpp"
#include "kagent/judge/prebuild.hpp"

namespace kagent::judge {

struct EachOutcome {
  int correct = 0;  // tier > 0
  int failed = 0;   // a record with tier -1
  int refused = 0;  // InputError: {"candidate", "error"} in place of a record
};

// `sink` gets each candidate's record, or {"candidate": name, "error": message} for an InputError.
// EnvError (no GPU, GPU busy) ends it: the rest would fail the same way.
// With a prebuilder, every candidate is submitted to it first, so that the next ones compile and
// build while one is measured, and they are evaluated as their builds end. Among those built, the
// order is judge/affinity.hpp's for one worker: the given order, a problem warm on the backend
// first. The records come in the order evaluated.
EachOutcome evaluate_each(EvalBackend& backend, const std::vector<CandidateRequest>& requests,
                          const std::function<void(const nlohmann::json&)>& sink, Prebuilder* prebuilder = nullptr);

}  // namespace kagent::judge
