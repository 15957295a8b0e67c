#pragma once
// result.json, what `kagent optimize` leaves in its run folder when a run ends: written by
// run_optimize (optimize_run.cpp), read by `bench --agent` (bench/agent_job.cpp) to make the
// problem's record. One struct, one version: a file of a newer version is refused, naming it and
// both versions; files written before the version existed read as version 1.
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

namespace kagent::agent {

struct ResultFile {
  static constexpr int kVersion = 1;
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
  std::string precision;
  std::optional<double> atol, rtol;
  nlohmann::json best;  // the best evaluation's score (Score::to_json), or null
};

void to_json(nlohmann::json& j, const ResultFile& r);
// Throws InputError for a wrong type or a newer version (naming the key, or both versions).
void from_json(const nlohmann::json& j, ResultFile& r);

// Bounded read (json_parse.hpp) of <dir>/result.json; InputError naming the file.
ResultFile read_result_file(const std::filesystem::path& file);

}  // namespace kagent::agent
