#pragma once
// An evaluation's report as the Score every record keeps (common/score.hpp): the one place where
// the reward, the baselines and the outcome's timing, device and flags become a record's fields.
#include "kagent/common/score.hpp"
#include "kagent/eval/evaluator.hpp"

namespace kagent {

// The tier and speedups of the reward, the candidate's median and the baselines, the precision and
// tolerance it was judged under, the GPU's name, the timing's stopping rule (when it was timed) and
// the outcome's flags as flag_text prints them.
Score report_score(const EvalReport& r);

}  // namespace kagent
