// One record of an evaluation's result and its JSON (see kagent/common/score.hpp).
#include "kagent/common/score.hpp"

#include <fmt/format.h>

#include <limits>

#include "kagent/common/error.hpp"
#include "kagent/common/json_text.hpp"
#include "kagent/common/saturate.hpp"

namespace kagent {

using json = nlohmann::json;

namespace {

json opt(const std::optional<double>& v) {
  return v ? json(*v) : json();
}

// A number; anything else is not recorded (as every reader of these records has taken it).
std::optional<double> number(const json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_number()) return std::nullopt;
  return it->get<double>();
}

void text(const json& j, const char* key, std::string& into) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return;
  if (!it->is_string()) throw InputError(fmt::format("{}: expected a string, got {}", key, show_json(*it)));
  into = it->get<std::string>();
}

}  // namespace

void to_json(json& j, const Score& s) {
  j = {{"tier", s.tier},
       {"candidate_ms", opt(s.candidate_ms)},
       {"eager_ms", opt(s.eager_ms)},
       {"compile_ms", opt(s.compile_ms)},
       {"speedup_vs_eager", opt(s.speedup_vs_eager)},
       {"speedup_vs_compile", opt(s.speedup_vs_compile)}};
  if (!s.precision.empty()) j["precision"] = s.precision;
  if (s.tolerance) j["tolerance"] = *s.tolerance;
  if (!s.device.empty()) j["device"] = s.device;
  if (!s.stop_rule.empty()) j["stop_rule"] = s.stop_rule;
  if (!s.flags.empty()) j["flags"] = s.flags;
}

void from_json(const json& j, Score& s) {
  if (!j.is_object()) throw InputError(fmt::format("a score: expected a JSON object, got {}", show_json(j)));
  s = Score{};
  if (auto it = j.find("tier"); it != j.end() && !it->is_null()) {
    // -1 to 3 (0 is read as written: records of early versions); 1e300 is not converted (UB).
    auto t = json_integer(*it, -1, 3);
    if (!t) throw InputError(fmt::format("tier: expected an integer from -1 to 3, got {}", show_json(*it)));
    s.tier = static_cast<int>(*t);
  }
  s.candidate_ms = number(j, "candidate_ms");
  if (!s.candidate_ms) s.candidate_ms = number(j, "median_ms");  // a run record's name before this type
  s.eager_ms = number(j, "eager_ms");
  s.compile_ms = number(j, "compile_ms");
  s.speedup_vs_eager = number(j, "speedup_vs_eager");
  s.speedup_vs_compile = number(j, "speedup_vs_compile");
  text(j, "precision", s.precision);
  if (auto it = j.find("tolerance"); it != j.end()) s.tolerance = recorded_tolerance(*it);
  text(j, "device", s.device);
  text(j, "stop_rule", s.stop_rule);
  if (auto it = j.find("flags"); it != j.end() && !it->is_null()) {
    if (!it->is_array()) throw InputError(fmt::format("flags: expected an array of strings, got {}", show_json(*it)));
    for (const auto& f : *it) {
      // A typed flag (protocol/flags.hpp's JSON) keeps its text.
      if (f.is_string())
        s.flags.push_back(f.get<std::string>());
      else if (f.is_object() && f.contains("text") && f["text"].is_string())
        s.flags.push_back(f["text"].get<std::string>());
      else
        throw InputError(fmt::format("flags: expected an array of strings, got {}", show_json(f)));
    }
  }
}

bool better_than(const Score& a, const Score& b) {
  if (a.tier != b.tier) return a.tier > b.tier;
  if (a.speedup_vs_compile && b.speedup_vs_compile) return *a.speedup_vs_compile > *b.speedup_vs_compile;
  if (a.speedup_vs_eager && b.speedup_vs_eager) return *a.speedup_vs_eager > *b.speedup_vs_eager;
  return false;  // a tie keeps the earlier one
}

BestByTurn best_by_turn_from_json(const json& j) {
  BestByTurn out;
  if (j.is_null()) return out;
  if (!j.is_array())
    throw InputError(fmt::format("best_by_turn: expected [turn, speedup] pairs, got {}", show_json(j)));
  for (const auto& step : j) {
    // [turn, speedup]; a turn is a non-negative int (converting 1e300 to one would be UB).
    auto turn =
        step.is_array() && step.size() == 2 ? json_integer(step[0], 0, std::numeric_limits<int>::max()) : std::nullopt;
    if (!turn || !step[1].is_number())
      throw InputError(fmt::format("best_by_turn: expected [turn, speedup] pairs, got {}", show_json(step)));
    out.emplace_back(static_cast<int>(*turn), step[1].get<double>());
  }
  return out;
}

}  // namespace kagent
