// The element-by-element check of outputs against the reference (output_check.hpp).
#include "output_check.hpp"

#include <algorithm>

#include <fmt/format.h>

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
}

}  // namespace

bool judge_output(const OutputCheck& chk, size_t i, const CompareResult& c,
                  const std::function<MismatchValues()>& values, EvalOutcome& o) {
  const Tolerance& tol = chk.tolerance;
  const TensorSpec& t = chk.outputs[i];
  if (chk.first_check) flag_degenerate(t, c, tol, o);
  note_errors(chk.outputs, i, c, chk.first_check, o);
  if (c.mismatches == 0) return true;
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
