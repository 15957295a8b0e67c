#pragma once
// The rules on a whole output, beside the element rule (compare_rule.hpp). An element-wise
// tolerance cannot see three ways of passing without the work (docs/measurement.md, "Whole-output
// rules"):
//   trivial    a constant output where the reference's varies, or one all within atol of zero
//              where the reference's is not: fails whatever the tolerance;
//   norm-wise  an output whose scale (largest |reference|) is within atol passes every element
//              check, so its relative L2 error is held to rtol instead (or to twice the
//              reference's own, where that is larger);
//   precision  a candidate computed at a precision the problem forbids (TF32 tensor cores, BF16 or
//              FP16 inputs on an fp32 problem) passes a tolerance sized for rounding of large
//              outputs. Its relative L2 error against the fp64 reference is set against the errors
//              of the reference itself and of the reference computed at each forbidden precision
//              (the reference server measures those): above the geometric mean of the reference's
//              error and a forbidden precision's, the output is nearer that precision's error.
// Pure functions of the comparison's sums and the server's figures, so CI tests them on recorded
// figures without a GPU.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "kagent/common/tolerance.hpp"
#include "kagent/spec/dtype.hpp"

namespace kagent {

// The reference computed at one precision, against the fp64 reference: relative L2 error
// (||r_p - r64|| / ||r64||) and largest element error. Not finite where that precision overflows.
struct PrecisionError {
  std::string precision;  // "tf32", "bf16", "fp16"
  double rel_l2 = 0, max_abs = 0;
};

// The reference's own error against fp64 at the precision it is evaluated at, and the tolerance
// (atol = rtol) it would need to pass against fp64 element by element (infinite: a NaN or Inf the
// fp64 result has not).
struct ReferenceError {
  std::string precision;
  double rel_l2 = 0, max_abs = 0, tolerance_needed = 0;
};

// The reference server's figures for one floating output, measured once per load on its first
// trial: each precision the problem forbids, the precision it allows computed with every operator
// at it (a tf32 problem's reference with TF32 in SDPA's products too, which its fused fp32 kernels
// skip), and why one has no figure.
struct OutputPrecision {
  std::string tensor;
  std::vector<PrecisionError> lower;
  std::string note;
  std::vector<PrecisionError> allowed{};
  // The reference itself, at the precision it is evaluated at: how far rounding alone takes it from
  // fp64 (large where the operator is ill-conditioned, as cumulative sums of exponentials are).
  std::optional<ReferenceError> own{};
};

// The figures of a load: the precision the problem is evaluated at and its outputs'.
// JSON (the server's trial reply, the runner's messages): {"precision": "fp32", "outputs":
// [{"tensor", "lower": [{"precision", "rel_l2", "max_abs"}], "allowed": [...], "note"}]}.
struct PrecisionFigures {
  std::string precision;
  std::vector<OutputPrecision> outputs;
  const OutputPrecision* find(const std::string& tensor) const;
};

// What the comparison measured of one whole output: the candidate's and the reference's finite
// ranges, and sums of squares over the elements where both sides are finite.
struct WholeOutput {
  std::string tensor;
  DType dtype = DType::f32;
  uint64_t numel = 0;
  double out_min = 0, out_max = 0, out_max_abs = 0;    // the candidate's finite values
  double ref_min = 0, ref_max = 0, ref_max_abs = 0;    // the reference's
  double sq_err = 0, sq_ref = 0;                       // sum (out - ref)^2, sum ref^2
  bool has_fp64 = false;                               // the three below apply
  double sq_err64 = 0, sq_ref64 = 0, sq_referr64 = 0;  // sum (out - r64)^2, sum r64^2, sum (ref - r64)^2
};

// A forbidden precision's error must be at least this many times the reference's own to be told
// apart from it: a precision the problem's operations do not feel (TF32 in a problem without a
// GEMM or convolution) is left out of the judgement, not used as a threshold at the reference's
// own error.
inline constexpr double kPrecisionDistinct = 8.0;

// The reference's relative error floor: the unit roundoff of the output's type, so that an exact
// reference (a ReLU, a copy) still leaves an honest kernel the rounding of its type.
double precision_floor(DType t);

// Why the output is trivial (a message naming it), or nullopt.
std::optional<std::string> trivial_output(const WholeOutput& w, const Tolerance& tol);

// Whether an output's scale is within atol, where the element check cannot fail it.
bool scale_within_atol(const WholeOutput& w, const Tolerance& tol);
// The relative L2 error such an output is judged by: against the fp64 reference where there is
// one, else against the reference. NaN when the reference is all zero.
double judged_rel_l2(const WholeOutput& w);
// The failure message of the norm-wise rule (an output within atol whose relative L2 error is
// above rtol, and above twice the reference's own against fp64), or nullopt.
std::optional<std::string> normwise_failure(const WholeOutput& w, const Tolerance& tol);

// The precision rule's figures for one output.
struct PrecisionJudgement {
  bool judged = false;   // an fp64 reference, a non-zero one, and a forbidden precision told apart
  double candidate = 0;  // the candidate's relative L2 error against fp64
  double reference = 0;  // the reference's own (before the floor)
  // The allowed precision's error where it is above the reference's own: the anchor then, since a
  // candidate may compute every operator at the precision the problem allows. 0: none.
  double allowed = 0;
  double limit = 0;     // the smallest geometric mean over the forbidden precisions told apart
  std::string nearest;  // the forbidden precision that sets the limit
  // Its error: its reference's against fp64, or where smaller the error of an output only stored
  // at it (3/8 of 2^-11 for TF32 and FP16, of 2^-8 for BF16), but at least kPrecisionDistinct x
  // the reference's own.
  double nearest_error = 0;
  std::string problem_precision;  // the precision the problem is evaluated at ("fp32")
  std::string note;               // why it was not judged, or which precisions were left out
  bool fails() const { return judged && candidate > limit; }
};
PrecisionJudgement judge_precision(const WholeOutput& w, const OutputPrecision& figures,
                                   const std::string& problem_precision);
// The largest finite error of the allowed precision's figures (0 without any): with the reference's
// own error and the type's floor, the anchor of the rule's geometric mean.
double allowed_error(const OutputPrecision& figures);
// The failure message of a judgement that fails.
std::string precision_failure_text(const WholeOutput& w, const PrecisionJudgement& j);

void to_json(nlohmann::json& j, const PrecisionError& e);
void from_json(const nlohmann::json& j, PrecisionError& e);
void to_json(nlohmann::json& j, const ReferenceError& e);
void from_json(const nlohmann::json& j, ReferenceError& e);
void to_json(nlohmann::json& j, const OutputPrecision& p);
void from_json(const nlohmann::json& j, OutputPrecision& p);
void to_json(nlohmann::json& j, const PrecisionFigures& f);
void from_json(const nlohmann::json& j, PrecisionFigures& f);

}  // namespace kagent
