#pragma once
// result.json, what `kagent optimize` leaves in its run folder when a run ends: written by
// run_optimize (optimize_run.cpp), read by `bench --agent` (bench/agent_job.cpp) to make the
// problem's record from it alone. One struct, one version: a file of a newer version is refused,
// naming it and both versions.
//
// Versions: 2 keeps the best candidate typed (candidate_score.hpp: its Score with the baselines'
// times, the GPU, the stop rule and the flags) and the best speedup by turn. 1 had the best's tier,
// speedups and time only ("median_ms") and no best_by_turn: such a file reads with the rest not
// recorded. Files written before the version key existed read as version 1.
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "kagent/agent/candidate_score.hpp"
#include "kagent/common/score.hpp"

namespace kagent::agent {

struct ResultFile {
  static constexpr int kVersion = 2;
  int version = kVersion;
  std::string op;
  std::string stop_reason;  // "finish", "turn budget", ... (agent.hpp's RunResult)
  int turns = 0, requests = 0;
  int64_t input_tokens = 0, output_tokens = 0;
  bool tokens_estimated = false;
  double wall_s = 0;
  int evaluations = 0;
  std::optional<std::string> final_path;  // the kernel the model finished with
  std::string summary;                    // its words at finish
  std::string llm;                        // the endpoint, described
  // What the run was judged under (its op's settings), whether or not any candidate was scored.
  std::string precision;
  std::optional<Tolerance> tolerance;
  std::optional<CandidateScore> best;  // the best evaluation (RunRecord::best), null when none
  BestByTurn best_by_turn;             // the best speedup vs eager reached by each turn
};

void to_json(nlohmann::json& j, const ResultFile& r);
// Throws InputError for a wrong type or a newer version (naming the key, or both versions).
void from_json(const nlohmann::json& j, ResultFile& r);

// Bounded read (json_parse.hpp) of <dir>/result.json; InputError naming the file.
ResultFile read_result_file(const std::filesystem::path& file);

}  // namespace kagent::agent
