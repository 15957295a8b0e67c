#pragma once
// results.jsonl: one line per problem of a batch (`kagent bench`), and the summary the CUDA Agent
// paper reports over them (`kagent report`): per level and overall, the pass rate, the share
// faster than torch eager and reaching tier 3, geometric-mean speedups, and fast_p.
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace kagent::report {

struct ResultRecord {
  std::string problem;  // e.g. "level1/19_ReLU"
  std::string level;    // e.g. "level1" ("" when the problem has none)
  std::string status;   // "correct", "incorrect", "compile_error", "error", "timeout", "unsolved"
  int tier = -1;
  std::optional<double> candidate_ms, eager_ms, compile_ms;
  std::optional<double> speedup_vs_eager, speedup_vs_compile;
  std::string error;    // one paragraph when status is not "correct"
  std::string run_dir;  // agent runs
  bool correct() const { return status == "correct"; }
};

void to_json(nlohmann::json& j, const ResultRecord& r);
void from_json(const nlohmann::json& j, ResultRecord& r);

// Reads results files (shards, resumed runs) into one set: a problem seen twice keeps its last
// record. A torn last line is skipped; any other malformed line is InputError naming file:line.
std::vector<ResultRecord> read_results(const std::vector<std::filesystem::path>& files);

struct Summary {
  std::string group;  // a level, or "overall"
  int problems = 0;
  double pass_rate = 0;                                        // correct / problems
  double faster_than_eager = 0;                                // tier >= 2 / problems
  double tier3 = 0;                                            // tier 3 / problems
  std::optional<double> geomean_vs_eager, geomean_vs_compile;  // over correct problems with a speedup
  double fast_1 = 0, fast_1_5 = 0, fast_2 = 0;                 // correct and speedup vs eager > p, / problems
};

// One Summary per level (sorted), then "overall".
std::vector<Summary> summarize(const std::vector<ResultRecord>& records);

// The summary as a text table or a Markdown table.
std::string render_summary(const std::vector<Summary>& s, bool markdown);

}  // namespace kagent::report
