#include "kagent/agent/run_record.hpp"

#include <climits>

#include <fmt/format.h>

#include "kagent/agent/transcript_events.hpp"
#include "kagent/common/files.hpp"
#include "kagent/common/saturate.hpp"
#include "kagent/eval/candidate_kind.hpp"

namespace kagent::agent {

namespace {

nlohmann::json opt(const std::optional<double>& v) {
  return v ? nlohmann::json(*v) : nlohmann::json();
}
std::optional<double> opt_from(const nlohmann::json& j, const char* key) {
  if (!j.contains(key) || !j[key].is_number()) return std::nullopt;
  return j[key].get<double>();
}

}  // namespace

nlohmann::json CandidateScore::to_json() const {
  return {{"number", number},
          {"path", path},
          {"tier", tier},
          {"speedup_vs_eager", opt(speedup_vs_eager)},
          {"speedup_vs_compile", opt(speedup_vs_compile)},
          {"median_ms", opt(median_ms)},
          {"file", file()}};
}

std::string CandidateScore::file() const {
  return fmt::format("candidates/{:03d}{}", number, extension);
}

CandidateScore CandidateScore::from_json(const nlohmann::json& j) {
  CandidateScore s;
  // A transcript is read back on resume: a figure out of range (1e300) is not converted (UB).
  auto integer = [&](const char* key, int fallback) {
    auto it = j.find(key);
    return it == j.end() ? fallback : static_cast<int>(json_integer(*it, INT_MIN, INT_MAX).value_or(fallback));
  };
  s.number = integer("number", 0);
  s.path = j.value("path", "");
  s.tier = integer("tier", -1);
  s.speedup_vs_eager = opt_from(j, "speedup_vs_eager");
  s.speedup_vs_compile = opt_from(j, "speedup_vs_compile");
  s.median_ms = opt_from(j, "median_ms");
  // Older transcripts have no .py candidates; their "file" names the .cu one.
  s.extension = kind_of_file(j.value("file", std::string(".cu"))).extensions().front();
  return s;
}

bool CandidateScore::better_than(const CandidateScore& o) const {
  if (tier != o.tier) return tier > o.tier;
  if (speedup_vs_compile && o.speedup_vs_compile) return *speedup_vs_compile > *o.speedup_vs_compile;
  if (speedup_vs_eager && o.speedup_vs_eager) return *speedup_vs_eager > *o.speedup_vs_eager;
  return false;  // a tie keeps the earlier one
}

RunRecord::RunRecord(std::filesystem::path out_dir, Transcript& transcript)
    : dir_(std::move(out_dir)), transcript_(transcript) {
  std::filesystem::create_directories(dir_ / "candidates");
}

CandidateScore RunRecord::evaluated(const std::string& path, const std::string& source, const EvalReport& r) {
  CandidateScore s;
  s.number = ++count_;
  s.path = path;
  s.tier = r.reward.tier;
  s.speedup_vs_eager = r.reward.speedup_vs_eager;
  s.speedup_vs_compile = r.reward.speedup_vs_compile;
  if (r.outcome.candidate_time) s.median_ms = r.outcome.candidate_time->median_ms;
  s.extension = kind_of_file(path).extensions().front();
  write_file_atomic(dir_ / s.file(), source);
  const bool best = !best_ || s.better_than(*best_);
  if (best) {
    best_ = s;
    write_file_atomic(dir_ / s.best_file(), source);
    // One best file: a plan that was best before a better ModelNew solution (or the reverse) goes.
    for (const CandidateKind* kind : candidate_kinds()) {
      const std::string other = "best" + kind->extensions().front();
      std::error_code ec;
      if (other != s.best_file()) std::filesystem::remove(dir_ / other, ec);
    }
  }
  transcript_.write(EvaluationEvent{s, best, report_json(r)});
  return s;
}

void RunRecord::restore(const std::vector<nlohmann::json>& events) {
  for (const auto& event : parse_events(events)) {
    const auto* e = std::get_if<EvaluationEvent>(&event);
    if (e == nullptr) continue;
    count_ = std::max(count_, e->score.number);
    if (e->best) best_ = e->score;
  }
}

}  // namespace kagent::agent
