// A run's candidate as its records keep it (see kagent/agent/candidate_score.hpp).
#include "kagent/agent/candidate_score.hpp"

#include <climits>

#include <fmt/format.h>

#include "kagent/common/saturate.hpp"
#include "kagent/eval/candidate_kind.hpp"

namespace kagent::agent {

std::string CandidateScore::file() const {
  return fmt::format("candidates/{:03d}{}", number, extension);
}

void to_json(nlohmann::json& j, const CandidateScore& s) {
  j = s.score;
  j["number"] = s.number;
  j["path"] = s.path;
  j["file"] = s.file();
}

void from_json(const nlohmann::json& j, CandidateScore& s) {
  s = CandidateScore{};
  s.score = j.get<Score>();
  // A transcript is read back on resume: a number out of range (1e300) is not converted (UB).
  if (auto it = j.find("number"); it != j.end()) s.number = static_cast<int>(json_integer(*it, 0, INT_MAX).value_or(0));
  if (auto it = j.find("path"); it != j.end() && it->is_string()) s.path = it->get<std::string>();
  // Older transcripts have no .py candidates; their "file" names the .cu one.
  auto file = j.find("file");
  s.extension =
      kind_of_file(file != j.end() && file->is_string() ? file->get<std::string>() : ".cu").extensions().front();
}

}  // namespace kagent::agent
