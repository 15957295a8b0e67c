#pragma once
// What a run keeps on disk besides the transcript: candidates/NNN.cu or NNN.py (every version
// evaluated, with its kind's extension), best.cu or best.py (highest tier, then speedup),
// result.json. Rebuilt from the transcript on --resume.
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "kagent/agent/transcript.hpp"
#include "kagent/eval/evaluator.hpp"

namespace kagent::agent {

struct CandidateScore {
  int number = 0;                 // candidates/NNN.cu (NNN.py for a ModelNew solution)
  std::string path;               // the workspace path the model evaluated
  std::string extension = ".cu";  // its kind's (CandidateKind::extensions): ".cu" (a plan), ".py" (ModelNew)
  int tier = -1;
  std::optional<double> speedup_vs_eager, speedup_vs_compile;
  std::optional<double> median_ms;
  nlohmann::json to_json() const;
  static CandidateScore from_json(const nlohmann::json& j);
  // Higher tier first, then the larger speedup (against compile when both have it, else eager).
  bool better_than(const CandidateScore& o) const;
  // candidates/NNN.cu or .py, and the run's best file of that kind: best.cu or best.py.
  std::string file() const;
  std::string best_file() const { return "best" + extension; }
};

class RunRecord {
 public:
  RunRecord(std::filesystem::path out_dir, Transcript& transcript);
  // Saves candidates/NNN.cu (or .py), writes an "evaluation" event, updates best.cu (or best.py).
  CandidateScore evaluated(const std::string& path, const std::string& source, const EvalReport& r);
  // From a transcript's "evaluation" events (resume).
  void restore(const std::vector<nlohmann::json>& events);
  const std::optional<CandidateScore>& best() const { return best_; }
  int evaluations() const { return count_; }
  const std::filesystem::path& dir() const { return dir_; }

 private:
  std::filesystem::path dir_;
  Transcript& transcript_;
  int count_ = 0;
  std::optional<CandidateScore> best_;
};

}  // namespace kagent::agent
