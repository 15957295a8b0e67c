#pragma once
// What a run keeps on disk besides the transcript: candidates/NNN.cu or NNN.py (every version
// evaluated, with its kind's extension), best.cu or best.py (highest tier, then speedup),
// result.json, and the best speedup vs eager reached by each turn (result.json's best_by_turn).
// Rebuilt from the transcript on --resume.
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "kagent/agent/candidate_score.hpp"
#include "kagent/agent/transcript.hpp"
#include "kagent/eval/evaluator.hpp"

namespace kagent::agent {

class RunRecord {
 public:
  RunRecord(std::filesystem::path out_dir, Transcript& transcript);
  // Saves candidates/NNN.cu (or .py), writes an "evaluation" event, updates best.cu (or best.py).
  CandidateScore evaluated(const std::string& path, const std::string& source, const EvalReport& r);
  // The turn whose tool calls come next (the agent loop says so before running them).
  void set_turn(int turn) { turn_ = turn; }
  // From a transcript's "evaluation" events, each in the turn of the reply before it (resume).
  void restore(const std::vector<nlohmann::json>& events);
  const std::optional<CandidateScore>& best() const { return best_; }
  const BestByTurn& best_by_turn() const { return best_by_turn_; }
  int evaluations() const { return count_; }
  const std::filesystem::path& dir() const { return dir_; }

 private:
  std::filesystem::path dir_;
  Transcript& transcript_;
  int count_ = 0;
  int turn_ = 0;
  std::optional<CandidateScore> best_;
  BestByTurn best_by_turn_;
  // A correct candidate with a larger speedup vs eager than any before it is a step of best_by_turn_.
  void note_speedup(const CandidateScore& s, int turn);
};

}  // namespace kagent::agent
