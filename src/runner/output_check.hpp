#pragma once
// Outputs against the reference's, element by element (kagent/protocol/compare_rule.hpp's rule,
// on the GPU by the harness's compare kernel): the mismatch report, the largest errors, and the
// flags on a reference that cannot tell right from wrong. Shared by a plan's evaluation
// (measure_correctness.cpp) and the compare request of a ModelNew solution's outputs
// (compare_request.cpp), so both are judged by the same words and numbers.
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "harness.hpp"
#include "kagent/protocol/output_rules.hpp"
#include "kagent/protocol/protocol.hpp"

namespace kagent::runner {

struct OutputCheck {
  const std::vector<TensorSpec>& outputs;
  const Tolerance& tolerance;
  int trial = 0;
  std::string when;          // "correctness", "re-check after timing sample N", ...
  bool first_check = false;  // the first comparison of the evaluation: the reference's quality is flagged
  // The reference server's figures at the forbidden precisions (null: native references, or none
  // measured): where there are figures and an fp64 reference, the precision rule judges.
  const PrecisionFigures* figures = nullptr;
};

// Compares cand[i] with reference[i] (and reference64[i], the fp64 reference, where not 0) for
// every output; fills o.errors, the flags of the first check and, on the first output that
// differs, o.mismatch and o.message. False when one differs: element by element, or by a
// whole-output rule (output_rules.hpp; a precision failure sets o.failure_stage to precision, the
// others leave the stage to the caller).
bool check_outputs(Harness& h, const OutputCheck& c, const std::vector<CUdeviceptr>& cand,
                   const std::vector<CUdeviceptr>& reference, const std::vector<CUdeviceptr>& reference64,
                   EvalOutcome& o);

// What output i's comparison `c` says, as check_outputs words it: its errors noted, the
// reference flagged on the first check, and on a mismatch the report, with the values at the first
// mismatching index from `values` (asked only then). False on a mismatch.
struct MismatchValues {
  double candidate = 0, reference = 0;
  std::optional<double> reference64;  // where the comparison had an fp64 reference
};
bool judge_output(const OutputCheck& chk, size_t i, const CompareResult& c,
                  const std::function<MismatchValues()>& values, EvalOutcome& o);

}  // namespace kagent::runner
