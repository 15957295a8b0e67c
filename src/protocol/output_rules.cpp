// The whole-output rules (kagent/protocol/output_rules.hpp).
#include "kagent/protocol/output_rules.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "kagent/common/tolerance.hpp"

namespace kagent {

namespace {

// How far a reference's values must spread, relative to its largest magnitude, for it to vary
// beyond rounding: an output that is one value in exact arithmetic (a softmax over one column, a
// mean subtracted from itself) still spreads over some ulps of the reduction that made it. 64
// units of the type's rounding, and never less than 2^-10 of the scale.
double vary_share(DType t) {
  if (!dtype_is_float(t)) return 0;
  double eps = 0x1p-23;
  if (t == DType::f16) eps = 0x1p-10;
  if (t == DType::bf16) eps = 0x1p-7;
  if (t == DType::f64) eps = 0x1p-52;
  return std::max(64 * eps, 0x1p-10);
}

// At or below this largest |reference| an output is degenerate (the degenerate-reference flag,
// output_check.cpp): it cannot tell a kernel from an empty one, and neither rule judges it.
constexpr double kDegenerate = 1e-6;

double rel(double sq_num, double sq_den) {
  if (!(sq_den > 0)) return std::numeric_limits<double>::quiet_NaN();
  return std::sqrt(sq_num / sq_den);
}

}  // namespace

const OutputPrecision* PrecisionFigures::find(const std::string& tensor) const {
  for (const auto& o : outputs)
    if (o.tensor == tensor) return &o;
  return nullptr;
}

double precision_floor(DType t) {
  switch (t) {
    case DType::f16:
      return 0x1p-11;
    case DType::bf16:
      return 0x1p-8;
    case DType::f64:
      return 0x1p-53;
    default:
      return 0x1p-24;
  }
}

std::optional<std::string> trivial_output(const WholeOutput& w, const Tolerance& tol) {
  if (w.numel < 2 || !std::isfinite(w.ref_max_abs) || w.ref_max_abs <= kDegenerate) return std::nullopt;
  const double spread = w.ref_max - w.ref_min;
  // Beyond rounding's share of the scale, or, with the fp64 reference, far beyond the reference's own
  // error: a spread 64x its RMS error against fp64 is the operator's, however small against the
  // scale (KernelBench level2/42: 16 values 55.1796 to 55.1806, within the tolerance of one
  // constant, each far nearer fp64 than to each other).
  const double rms_referr =
      w.has_fp64 && w.numel > 0 ? std::sqrt(w.sq_referr64 / static_cast<double>(w.numel)) : HUGE_VAL;
  const bool ref_varies = std::isfinite(spread) && (spread > vary_share(w.dtype) * w.ref_max_abs ||
                                                    (std::isfinite(rms_referr) && spread > 64 * rms_referr));
  const bool out_finite = std::isfinite(w.out_min) && std::isfinite(w.out_max);
  if (ref_varies && out_finite && w.out_min == w.out_max)
    return fmt::format(
        "output '{}' is the constant {:.8g} on all {} elements, where the reference's varies over [{:.6g}, {:.6g}]: "
        "a constant output fails whatever the tolerance",
        w.tensor, w.out_min, w.numel, w.ref_min, w.ref_max);
  if (out_finite && w.out_max_abs <= tol.atol && w.ref_max_abs > 2 * tol.atol)
    return fmt::format(
        "output '{}' is all within atol={:g} of zero (largest |value| {:.3g}), where the reference's reaches {:.6g}: "
        "an output of (near) zeros fails whatever the tolerance",
        w.tensor, tol.atol, w.out_max_abs, w.ref_max_abs);
  return std::nullopt;
}

bool scale_within_atol(const WholeOutput& w, const Tolerance& tol) {
  return dtype_is_float(w.dtype) && std::isfinite(w.ref_max_abs) && w.ref_max_abs > kDegenerate &&
         w.ref_max_abs <= tol.atol;
}

double judged_rel_l2(const WholeOutput& w) {
  if (w.has_fp64 && w.sq_ref64 > 0) return rel(w.sq_err64, w.sq_ref64);
  return rel(w.sq_err, w.sq_ref);
}

std::optional<std::string> normwise_failure(const WholeOutput& w, const Tolerance& tol) {
  if (!scale_within_atol(w, tol)) return std::nullopt;
  const bool fp64 = w.has_fp64 && w.sq_ref64 > 0;
  const double e = judged_rel_l2(w);
  // As the element rule passes an element no farther from fp64 than the reference: an ill-conditioned
  // reference's own error (twice it, for another summation order) is allowed where it exceeds rtol.
  const double own = fp64 ? rel(w.sq_referr64, w.sq_ref64) : 0.0;
  const double limit = std::max(tol.rtol, std::isfinite(own) ? 2 * own : 0.0);
  if (!(e > limit)) return std::nullopt;  // NaN (an all-zero reference) is not judged
  return fmt::format(
      "output '{}' has a relative L2 error of {:.3g} against the {}reference, above {:.3g} (rtol={:g}{}): its scale "
      "(largest |reference| {:.3g}) is within atol={:g}, where no element can fail, so it is judged as a whole",
      w.tensor, e, fp64 ? "fp64 " : "", limit, tol.rtol,
      limit > tol.rtol ? fmt::format(", or twice the reference's own {:.3g}", own) : "", w.ref_max_abs, tol.atol);
}

namespace {

// The relative L2 error of an output computed exactly and only stored at `precision`: about 3/8 of
// 2^-p for a significand of p bits (ReLU's output in FP16 has 1.85e-4 = 0.379 x 2^-11; in BF16
// 1.48e-3 = 0.379 x 2^-8). Where the operator amplifies a precision's rounding (a cumsum summed in
// FP16: 0.127 against fp64), its reference's error is far above this, and a kernel that computes in
// fp32 and stores its output at that precision would sit under a limit taken from it.
double storage_error(const std::string& precision) {
  if (precision == "tf32" || precision == "fp16") return 0.375 * 0x1p-11;
  if (precision == "bf16") return 0.375 * 0x1p-8;
  return std::numeric_limits<double>::infinity();
}

}  // namespace

PrecisionJudgement judge_precision(const WholeOutput& w, const OutputPrecision& figures,
                                   const std::string& problem_precision) {
  PrecisionJudgement j;
  j.problem_precision = problem_precision;
  if (!dtype_is_float(w.dtype) || w.dtype == DType::f64) {
    j.note = "not a floating output below float64";
    return j;
  }
  if (!(w.ref_max_abs > kDegenerate)) {
    j.note = "a degenerate reference (all near zero)";
    return j;
  }
  if (!w.has_fp64 || !(w.sq_ref64 > 0)) {
    j.note = w.has_fp64 ? "the fp64 reference is all zero" : "no fp64 reference";
    return j;
  }
  j.candidate = rel(w.sq_err64, w.sq_ref64);
  j.reference = rel(w.sq_referr64, w.sq_ref64);
  // A reference that leaves some of its operators above the allowed precision (SDPA's fused fp32
  // kernels ignore TF32) is more accurate than a candidate computing all of them at it may be.
  if (const double a = allowed_error(figures); a > j.reference) j.allowed = a;
  const double floor = std::max({j.reference, j.allowed, precision_floor(w.dtype)});
  std::string left_out;
  for (const auto& p : figures.lower) {
    if (!std::isfinite(p.rel_l2)) {
      left_out += fmt::format("{}{} (overflows)", left_out.empty() ? "" : ", ", p.precision);
      continue;
    }
    if (p.rel_l2 < kPrecisionDistinct * floor) {
      left_out += fmt::format("{}{} ({:.3g}, not {:g}x the reference's {:.3g})", left_out.empty() ? "" : ", ",
                              p.precision, p.rel_l2, kPrecisionDistinct, floor);
      continue;
    }
    // Its reference's error, or the error of storing the output at it where that is smaller; never
    // below the distinction, so a precision told apart stays in the judgement.
    const double error = std::min(p.rel_l2, std::max(storage_error(p.precision), kPrecisionDistinct * floor));
    const double limit = std::sqrt(floor * error);
    if (!j.judged || limit < j.limit) {
      j.judged = true;
      j.limit = limit;
      j.nearest = p.precision;
      j.nearest_error = error;
    }
  }
  if (!left_out.empty()) j.note = "left out: " + left_out;
  if (!j.judged && j.note.empty()) j.note = figures.note.empty() ? "no forbidden precision measured" : figures.note;
  if (!std::isfinite(j.candidate)) j.judged = false;  // a NaN or Inf is the element rule's to fail
  return j;
}

double allowed_error(const OutputPrecision& figures) {
  double e = 0;
  for (const auto& a : figures.allowed)
    if (std::isfinite(a.rel_l2)) e = std::max(e, a.rel_l2);
  return e;
}

std::string precision_failure_text(const WholeOutput& w, const PrecisionJudgement& j) {
  const std::string& p = j.problem_precision.empty() ? std::string("fp32") : j.problem_precision;
  return fmt::format(
      "output '{}' is computed at a lower precision than {}: its relative L2 error against the fp64 reference is "
      "{:.3g}, the {} reference's own {:.3g}{} and {}'s {:.3g}; above {:.3g}, their geometric "
      "mean, an output is nearer {}'s error than {}'s. Compute in {} (no TF32 tensor cores, no half-precision "
      "inputs, products or accumulators), or evaluate at a precision that allows it (--precision)",
      w.tensor, p, j.candidate, p, j.reference,
      j.allowed > 0 ? fmt::format(" ({:.3g} with every operator at {})", j.allowed, p) : std::string(), j.nearest,
      j.nearest_error, j.limit, j.nearest, p, p);
}

void to_json(nlohmann::json& j, const PrecisionError& e) {
  auto num = [](double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(); };
  j = {{"precision", e.precision}, {"rel_l2", num(e.rel_l2)}, {"max_abs", num(e.max_abs)}};
}

void from_json(const nlohmann::json& j, PrecisionError& e) {
  auto num = [&](const char* key) {
    const auto& v = j.at(key);
    return v.is_null() ? std::numeric_limits<double>::infinity() : v.get<double>();
  };
  e.precision = j.at("precision").get<std::string>();
  e.rel_l2 = num("rel_l2");
  e.max_abs = num("max_abs");
}

void to_json(nlohmann::json& j, const ReferenceError& e) {
  auto num = [](double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(); };
  j = {{"precision", e.precision},
       {"rel_l2", num(e.rel_l2)},
       {"max_abs", num(e.max_abs)},
       {"tolerance_needed", num(e.tolerance_needed)}};
}

void from_json(const nlohmann::json& j, ReferenceError& e) {
  auto num = [&](const char* key) {
    auto v = j.find(key);
    return v == j.end() || v->is_null() ? std::numeric_limits<double>::infinity() : v->get<double>();
  };
  e.precision = j.at("precision").get<std::string>();
  e.rel_l2 = num("rel_l2");
  e.max_abs = num("max_abs");
  e.tolerance_needed = num("tolerance_needed");
}

void to_json(nlohmann::json& j, const OutputPrecision& p) {
  j = {{"tensor", p.tensor}, {"lower", p.lower}};
  if (!p.allowed.empty()) j["allowed"] = p.allowed;
  if (p.own) j["own"] = *p.own;
  if (!p.note.empty()) j["note"] = p.note;
}

void from_json(const nlohmann::json& j, OutputPrecision& p) {
  p.tensor = j.at("tensor").get<std::string>();
  p.lower = j.value("lower", std::vector<PrecisionError>{});
  p.allowed = j.value("allowed", std::vector<PrecisionError>{});
  if (auto own = j.find("own"); own != j.end() && own->is_object()) p.own = own->get<ReferenceError>();
  p.note = j.value("note", "");
}

void to_json(nlohmann::json& j, const PrecisionFigures& f) {
  j = {{"precision", f.precision}, {"outputs", f.outputs}};
}

void from_json(const nlohmann::json& j, PrecisionFigures& f) {
  f.precision = j.value("precision", "");
  f.outputs = j.value("outputs", std::vector<OutputPrecision>{});
}

}  // namespace kagent
