// An evaluation's report as a Score (see kagent/eval/report_score.hpp).
#include "kagent/eval/report_score.hpp"

namespace kagent {

Score report_score(const EvalReport& r) {
  Score s;
  s.tier = r.reward.tier;
  s.speedup_vs_eager = r.reward.speedup_vs_eager;
  s.speedup_vs_compile = r.reward.speedup_vs_compile;
  s.eager_ms = r.baselines.eager_ms;
  s.compile_ms = r.baselines.compile_ms;
  if (r.outcome.candidate_time) {
    s.candidate_ms = r.outcome.candidate_time->median_ms;
    s.stop_rule = stop_rule_text(r.outcome.stop_rule);
  }
  s.precision = std::string(precision_name(r.precision));
  s.tolerance = r.tolerance;
  s.device = r.outcome.device.name;
  for (const auto& f : r.outcome.flags) s.flags.push_back(flag_text(f));
  return s;
}

}  // namespace kagent
