#include "kagent/agent/result_file.hpp"

#include <fmt/format.h>

#include "kagent/common/error.hpp"
#include "kagent/common/files.hpp"
#include "kagent/common/json_parse.hpp"

namespace kagent::agent {

using json = nlohmann::json;

void to_json(json& j, const ResultFile& r) {
  j = {{"version", r.version},
       {"op", r.op},
       {"stop_reason", r.stop_reason},
       {"turns", r.turns},
       {"requests", r.requests},
       {"input_tokens", r.input_tokens},
       {"output_tokens", r.output_tokens},
       {"tokens_estimated", r.tokens_estimated},
       {"wall_s", r.wall_s},
       {"evaluations", r.evaluations},
       {"final", r.final_path ? json(*r.final_path) : json()},
       {"summary", r.summary},
       {"llm", r.llm},
       {"precision", r.precision},
       {"tolerance", r.tolerance ? json(*r.tolerance) : json()},
       {"best", r.best ? json(*r.best) : json()},
       {"best_by_turn", r.best_by_turn}};
}

namespace {

template <typename T>
void get(const json& j, const char* key, T& out) {
  if (auto it = j.find(key); it != j.end() && !it->is_null()) {
    try {
      out = it->get<T>();
    } catch (const json::exception&) {
      throw InputError(fmt::format("key {}: expected a {}, got {}", key,
                                   std::is_same_v<T, std::string> ? "string" : "number", it->type_name()));
    }
  }
}

}  // namespace

void from_json(const json& j, ResultFile& r) {
  if (!j.is_object()) throw InputError(fmt::format("expected a JSON object, got {}", j.type_name()));
  r = ResultFile{};
  r.version = 1;  // files from before the version key
  get(j, "version", r.version);
  if (r.version > ResultFile::kVersion || r.version < 1)
    throw InputError(fmt::format("result version {}; this kagent reads version {}", r.version, ResultFile::kVersion));
  get(j, "op", r.op);
  get(j, "stop_reason", r.stop_reason);
  get(j, "turns", r.turns);
  get(j, "requests", r.requests);
  get(j, "input_tokens", r.input_tokens);
  get(j, "output_tokens", r.output_tokens);
  if (auto it = j.find("tokens_estimated"); it != j.end() && it->is_boolean()) r.tokens_estimated = it->get<bool>();
  get(j, "wall_s", r.wall_s);
  get(j, "evaluations", r.evaluations);
  if (auto it = j.find("final"); it != j.end() && it->is_string()) r.final_path = it->get<std::string>();
  get(j, "summary", r.summary);
  get(j, "llm", r.llm);
  get(j, "precision", r.precision);
  if (auto t = j.find("tolerance"); t != j.end()) r.tolerance = recorded_tolerance(*t);
  // Version 1's best is read by the same reader: what it did not hold stays unrecorded.
  try {
    if (auto it = j.find("best"); it != j.end() && it->is_object()) r.best = it->get<CandidateScore>();
  } catch (const InputError& e) {
    throw InputError(fmt::format("best: {}", e.what()));
  }
  if (auto it = j.find("best_by_turn"); it != j.end()) r.best_by_turn = best_by_turn_from_json(*it);
}

ResultFile read_result_file(const std::filesystem::path& file) {
  const json j = parse_json_input<json>(read_text_file(file), file.string());
  try {
    return j.get<ResultFile>();
  } catch (const InputError& e) {
    throw InputError(fmt::format("{}: {}", file.string(), e.what()));
  }
}

}  // namespace kagent::agent
