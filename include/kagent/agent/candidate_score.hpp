#pragma once
// One candidate of an agent run as its records keep it: the transcript's "evaluation" events
// ("score") and result.json ("best"). Its number and the workspace path the model evaluated, the
// file kept for it, and the evaluation's Score (common/score.hpp).
//
// JSON: {"number", "path", "file": "candidates/NNN.cu"} beside the Score's own keys. Records
// written before the Score type named the candidate's time "median_ms" and held only the tier,
// speedups and that time; they read with the rest not recorded.
#include <string>

#include <nlohmann/json.hpp>

#include "kagent/common/score.hpp"

namespace kagent::agent {

struct CandidateScore {
  int number = 0;                 // candidates/NNN.cu (NNN.py for a ModelNew solution)
  std::string path;               // the workspace path the model evaluated
  std::string extension = ".cu";  // its kind's (CandidateKind::extensions): ".cu" (a plan), ".py" (ModelNew)
  Score score;
  // Higher tier first, then the larger speedup (against compile when both have it, else eager).
  bool better_than(const CandidateScore& o) const { return kagent::better_than(score, o.score); }
  // candidates/NNN.cu or .py, and the run's best file of that kind: best.cu or best.py.
  std::string file() const;
  std::string best_file() const { return "best" + extension; }
  bool operator==(const CandidateScore&) const = default;
};

void to_json(nlohmann::json& j, const CandidateScore& s);
// InputError naming the key for a field of the wrong type (common/score.hpp).
void from_json(const nlohmann::json& j, CandidateScore& s);

}  // namespace kagent::agent
