// The element-by-element check of outputs against the reference (output_check.hpp).
#include "output_check.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "kagent/protocol/output_rules.hpp"
#include "kagent/protocol/reference_quality.hpp"

namespace kagent::runner {

namespace {

void flag_degenerate(const TensorSpec& t, const CompareResult& c, const Tolerance& tol, EvalOutcome& o) {
  // A reference that is all (near) zero or constant cannot tell a correct kernel from an empty one.
  if (c.ref_max_abs <= 1e-6) {
    o.flags.push_back({FlagKind::degenerate_reference, t.name, c.ref_max_abs, 1e-6,
                       fmt::format("is all (near) zero (max |ref| = {:.3g})", c.ref_max_abs)});
    return;
  }
  if (c.ref_min == c.ref_max) {
    o.flags.push_back(
        {FlagKind::degenerate_reference, t.name, c.ref_min, 0, fmt::format("is constant ({:.6g})", c.ref_min)});
    return;
  }
  // Weaker, but as telling: on most elements, or on all within the tolerance, it cannot either.
  if (auto why =
          weak_reference(static_cast<uint64_t>(t.numel()), c.ref_zeros, c.ref_min, c.ref_max, c.ref_min_abs, tol))
    o.flags.push_back({FlagKind::weak_reference, t.name, 0, 0, *why});
}

WholeOutput whole_of(const TensorSpec& t, const CompareResult& c) {
  WholeOutput w;
  w.tensor = t.name;
  w.dtype = t.dtype;
  w.numel = static_cast<uint64_t>(t.numel());
  w.out_min = c.out_min, w.out_max = c.out_max, w.out_max_abs = c.out_max_abs;
  w.ref_min = c.ref_min, w.ref_max = c.ref_max, w.ref_max_abs = c.ref_max_abs;
  w.sq_err = c.sq_err, w.sq_ref = c.sq_ref;
  w.has_fp64 = c.has_fp64;
  w.sq_err64 = c.sq_err64, w.sq_ref64 = c.sq_ref64, w.sq_referr64 = c.sq_referr64;
  return w;
}

void keep_max(std::optional<double>& into, double v) {
  if (std::isfinite(v)) into = std::max(into.value_or(v), v);
}

// The precision rule on one output. With an fp64 reference it judges directly; without one (the
// re-checks during timing compare with the reference alone) it uses what an earlier check of the
// evaluation measured: the candidate's error against fp64 is at least its error against the
// reference less the reference's own, so a candidate whose error against the reference alone
// exceeds the limit by the reference's error is past the limit. False when it fails.
bool judge_precision_of(const OutputCheck& chk, const WholeOutput& w, OutputErrors& e, EvalOutcome& o) {
  if (chk.figures == nullptr) return true;
  const OutputPrecision* f = chk.figures->find(w.tensor);
  if (f == nullptr) return true;
  if (!w.has_fp64) {
    if (!e.precision_limit || !e.ref_rel_l2_fp64 || !(w.sq_ref > 0)) return true;
    const double against_ref = std::sqrt(w.sq_err / w.sq_ref);
    if (!(against_ref - *e.ref_rel_l2_fp64 > *e.precision_limit)) return true;
    PrecisionJudgement j;
    j.judged = true;
    j.problem_precision = chk.figures->precision;
    j.candidate = against_ref - *e.ref_rel_l2_fp64;
    j.reference = *e.ref_rel_l2_fp64;
    j.limit = *e.precision_limit;
    j.nearest = e.precision_nearest;
    // The error the limit was taken from (limit = sqrt(anchor x error), output_rules.cpp).
    if (const double a = allowed_error(*f); a > j.reference) j.allowed = a;
    j.nearest_error = j.limit * j.limit / std::max({j.reference, j.allowed, precision_floor(w.dtype)});
    o.failure_stage = FailureStage::precision;
    o.message = fmt::format(
        "{} ({}, trial {}; the figure is a lower bound: its error against the reference, {:.3g}, "
        "less the reference's own)",
        precision_failure_text(w, j), chk.when, chk.trial, against_ref);
    return false;
  }
  const PrecisionJudgement j = judge_precision(w, *f, chk.figures->precision);
  if (j.reference > 0 || j.judged) keep_max(e.ref_rel_l2_fp64, j.reference);
  if (!j.judged) {
    if (e.precision_note.empty()) e.precision_note = j.note;
    return true;
  }
  e.precision_note = j.note;
  if (!e.precision_limit || j.limit < *e.precision_limit) {
    e.precision_limit = j.limit;
    e.precision_nearest = j.nearest;
  }
  if (!j.fails()) return true;
  o.failure_stage = FailureStage::precision;
  o.message = fmt::format("{} ({}, trial {})", precision_failure_text(w, j), chk.when, chk.trial);
  return false;
}

void note_errors(const std::vector<TensorSpec>& outputs, size_t i, const CompareResult& c, bool first_check,
                 EvalOutcome& o) {
  if (o.errors.size() <= i) o.errors.resize(outputs.size());
  OutputErrors& e = o.errors[i];
  e.tensor = outputs[i].name;
  e.max_abs = std::max(e.max_abs, c.max_abs);
  if (c.has_fp64) {
    e.max_abs_fp64 = std::max(e.max_abs_fp64.value_or(0.0), c.max_abs_fp64);
    e.ref_error_fp64 = std::max(e.ref_error_fp64.value_or(0.0), c.ref_error_fp64);
    e.passed_by_fp64 = std::max(e.passed_by_fp64, c.passed_by_fp64);
  }
  if (first_check && outputs[i].numel() > 0)
    e.zero_share = static_cast<double>(c.ref_zeros) / static_cast<double>(outputs[i].numel());
  keep_max(e.rel_l2, judged_rel_l2(whole_of(outputs[i], c)));
}

}  // namespace

bool judge_output(const OutputCheck& chk, size_t i, const CompareResult& c,
                  const std::function<MismatchValues()>& values, EvalOutcome& o) {
  const Tolerance& tol = chk.tolerance;
  const TensorSpec& t = chk.outputs[i];
  const WholeOutput w = whole_of(t, c);
  if (chk.first_check) {
    flag_degenerate(t, c, tol, o);
    if (scale_within_atol(w, tol))
      o.flags.push_back({FlagKind::scale_within_atol, t.name, c.ref_max_abs, tol.atol,
                         fmt::format("has its largest |value| {:.3g} within atol={:g}: no element can fail it, so it "
                                     "is judged by its relative L2 error, within rtol={:g}",
                                     c.ref_max_abs, tol.atol, tol.rtol)});
  }
  note_errors(chk.outputs, i, c, chk.first_check, o);
  // A trivial output first: its message says what it is, where the element check (if it fails at
  // all under the tolerance) would only list mismatches.
  if (auto why = trivial_output(w, tol)) {
    o.message = fmt::format("{} ({}, trial {})", *why, chk.when, chk.trial);
    return false;
  }
  if (c.mismatches == 0) {
    if (auto why = normwise_failure(w, tol)) {
      o.message = fmt::format("{} ({}, trial {})", *why, chk.when, chk.trial);
      return false;
    }
    return judge_precision_of(chk, w, o.errors[i], o);
  }
  const MismatchValues v = values();
  MismatchReport m;
  m.tensor = t.name;
  m.trial = chk.trial;
  m.when = chk.when;
  m.first_index = c.first_bad;
  m.candidate_value = v.candidate;
  m.reference_value = v.reference;
  m.count = c.mismatches;
  m.nan_count = c.nan_mismatches;
  m.numel = static_cast<uint64_t>(t.numel());
  m.max_abs = c.max_abs;
  m.max_rel = c.max_rel;
  std::string fp64_text;
  if (c.has_fp64 && v.reference64) {
    m.reference_fp64_value = *v.reference64;
    m.max_abs_fp64 = c.max_abs_fp64;
    m.ref_error_fp64 = c.ref_error_fp64;
    fp64_text = fmt::format(
        "; against the fp64 reference ({:.8g} there): max abs error {:.3g}, the reference's own {:.3g} (an element "
        "within the tolerance of fp64, or no farther from it than the reference, passes)",
        *m.reference_fp64_value, c.max_abs_fp64, c.ref_error_fp64);
  }
  o.mismatch = m;
  o.message = fmt::format(
      "output '{}' differs from the reference ({}, trial {}): {} of {} elements outside atol={:g} rtol={:g} "
      "({} NaN/Inf mismatches); first at index {}: candidate {:.8g}, reference {:.8g}; max abs error {:.3g}, "
      "max rel error {:.3g}{}",
      t.name, chk.when, chk.trial, m.count, m.numel, tol.atol, tol.rtol, m.nan_count, m.first_index, m.candidate_value,
      m.reference_value, m.max_abs, m.max_rel, fp64_text);
  return false;
}

bool check_outputs(Harness& h, const OutputCheck& chk, const std::vector<CUdeviceptr>& cand,
                   const std::vector<CUdeviceptr>& reference, const std::vector<CUdeviceptr>& reference64,
                   EvalOutcome& o) {
  for (size_t i = 0; i < chk.outputs.size(); ++i) {
    const TensorSpec& t = chk.outputs[i];
    const CUdeviceptr ref64 = i < reference64.size() ? reference64[i] : 0;
    const CompareResult c = h.compare(cand[i], reference[i], t.numel(), t.dtype, chk.tolerance, ref64);
    auto values = [&] {
      const auto at = static_cast<int64_t>(c.first_bad);
      MismatchValues v{h.read(cand[i], at, t.dtype), h.read(reference[i], at, t.dtype), std::nullopt};
      if (c.has_fp64) v.reference64 = h.read(ref64, at, DType::f64);
      return v;
    };
    if (!judge_output(chk, i, c, values, o)) return false;
  }
  return true;
}

}  // namespace kagent::runner
