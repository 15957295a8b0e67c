#include "kagent/agent/run_record.hpp"

#include <fmt/format.h>

#include "kagent/agent/transcript_events.hpp"
#include "kagent/common/files.hpp"
#include "kagent/eval/candidate_kind.hpp"
#include "kagent/eval/report_score.hpp"

namespace kagent::agent {

RunRecord::RunRecord(std::filesystem::path out_dir, Transcript& transcript)
    : dir_(std::move(out_dir)), transcript_(transcript) {
  std::filesystem::create_directories(dir_ / "candidates");
}

void RunRecord::note_speedup(const CandidateScore& s, int turn) {
  if (!s.score.correct() || !s.score.speedup_vs_eager) return;
  const double x = *s.score.speedup_vs_eager;
  if (best_by_turn_.empty() || x > best_by_turn_.back().second) best_by_turn_.emplace_back(turn, x);
}

CandidateScore RunRecord::evaluated(const std::string& path, const std::string& source, const EvalReport& r) {
  CandidateScore s;
  s.number = ++count_;
  s.path = path;
  s.score = report_score(r);
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
  note_speedup(s, turn_);
  transcript_.write(EvaluationEvent{s, best, report_json(r)});
  return s;
}

void RunRecord::restore(const std::vector<nlohmann::json>& events) {
  for (const auto& event : parse_events(events)) {
    if (const auto* m = std::get_if<MessageEvent>(&event)) {
      if (m->reply && m->reply->turn) turn_ = *m->reply->turn;
      continue;
    }
    const auto* e = std::get_if<EvaluationEvent>(&event);
    if (e == nullptr) continue;
    count_ = std::max(count_, e->score.number);
    if (e->best) best_ = e->score;
    note_speedup(e->score, turn_);
  }
}

}  // namespace kagent::agent
