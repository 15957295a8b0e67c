#pragma once
// One evaluation's result as every record of it keeps it: a candidate of an agent run (transcript
// and result.json), a problem of a batch (results.jsonl), a `kagent check` verdict. The tier, the
// times and speedups, what correctness was judged under and how the time was measured are one
// type with one serializer, so a field has one name and reads the same wherever it is stored.
// Low in the layering (common) because the report library, which links nothing of the evaluator,
// embeds it too; the evaluator's report becomes a Score in one place (eval/report_score.hpp).
//
// JSON: the score's keys sit flat in the object of the record that embeds it (results.jsonl's
// record version 2 kept them so):
//   "tier": -1, 1, 2 or 3 (docs/measurement.md)
//   "candidate_ms", "eager_ms", "compile_ms", "speedup_vs_eager", "speedup_vs_compile": number, or
//     null when there is none
//   "precision": "fp32", ...; "tolerance": {"atol", "rtol"}; "device": the GPU's name; "stop_rule":
//     the timing's stopping rule as stop_rule_text prints it; "flags": the evaluation's flags as
//     flag_text prints them. Each absent when not recorded (nothing measured, older records).
// Reading: an absent key keeps its default, a time or speedup that is not a number is not recorded,
// a tolerance without both numbers is not recorded; "median_ms" (the candidate's time in records
// written before this type) reads as candidate_ms. A text or flags of the wrong type, or a tier
// that is not an integer from -1 to 3, is InputError naming the key.
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "kagent/common/tolerance.hpp"

namespace kagent {

struct Score {
  int tier = -1;  // -1 (did not compile, or not correct), 1 correct, 2 faster than eager, 3 also beats torch.compile
  std::optional<double> candidate_ms, eager_ms, compile_ms;  // medians
  std::optional<double> speedup_vs_eager, speedup_vs_compile;
  std::string precision;               // what correctness was judged under ("" not recorded)
  std::optional<Tolerance> tolerance;  // and with what tolerance
  std::string device;                  // the GPU's name ("" nothing ran)
  std::string stop_rule;               // how the timing stopped (stop_rule_text; "" not timed)
  std::vector<std::string> flags;      // flag_text of each flag of the evaluation
  bool correct() const { return tier >= 1; }
  bool operator==(const Score&) const = default;
};

void to_json(nlohmann::json& j, const Score& s);
void from_json(const nlohmann::json& j, Score& s);

// Higher tier first, then the larger speedup (against compile when both have it, else eager); a
// tie is not better.
bool better_than(const Score& a, const Score& b);

// An agent run's best speedup vs eager reached by each turn, as (turn, speedup) steps (result.json,
// results.jsonl). JSON: [[turn, speedup], ...].
using BestByTurn = std::vector<std::pair<int, double>>;
// InputError naming best_by_turn for anything but [turn, speedup] pairs with a turn in int's range.
BestByTurn best_by_turn_from_json(const nlohmann::json& j);

}  // namespace kagent
