// The element rule of kagent's correctness check (docs/measurement.md), one definition for the device
// and the host: src/runner/harness_kernels.cu includes it (CMake pastes this file in place of the
// #include when it embeds the kernels as a string for NVRTC), and host code and tests include it
// as a header. Plain arithmetic only, no <cmath>: both compilers take it as it is. Include guards,
// not #pragma once, which NVRTC would see in its main file.
#ifndef KAGENT_PROTOCOL_COMPARE_RULE_HPP
#define KAGENT_PROTOCOL_COMPARE_RULE_HPP

#if defined(__CUDACC__) || defined(__CUDACC_RTC__)
#define KAGENT_HD __host__ __device__ __forceinline__
#else
#define KAGENT_HD inline
#endif

namespace kagent {

// What one element's check found.
enum ElementVerdict : int {
  kElementFails = 0,        // outside the tolerance of the reference, and of the fp64 reference
  kElementPasses = 1,       // within the tolerance of the reference at the op's precision
  kElementPassesFp64 = 2,   // outside that, but right against the fp64 reference (see element_verdict)
  kElementNanMismatch = 3,  // NaN or Inf where the reference has none, or the reverse, or the other infinity
};

KAGENT_HD bool rule_is_nan(double x) {
  return x != x;
}
// inf - inf and NaN - NaN are NaN, which compares unequal to 0.
KAGENT_HD bool rule_is_finite(double x) {
  return x - x == 0.0;
}
KAGENT_HD double rule_abs(double x) {
  return x < 0 ? -x : x;
}

// The first test of element_verdict, for finite c and r: within the tolerance of the reference at
// the op's precision. The comparison kernel takes it first and asks element_verdict only for an
// element it does not pass.
KAGENT_HD bool within_tolerance(double c, double r, double atol, double rtol) {
  return rule_abs(c - r) <= atol + rtol * rule_abs(r);
}

// c: the candidate's element; r: the reference's at the op's precision; r64: the reference computed
// in float64 (has64 false when there is none). An element passes when
//   |c - r| <= atol + rtol |r|                         (today's rule), or
//   |c - r64| <= atol + rtol |r64|                     (right within the tolerance of the truth), or
//   |c - r64| <= |r - r64|                             (no farther from the truth than the reference),
// so a candidate more accurate than the reference is never failed for the reference's rounding.
// NaN and Inf must match the reference at the op's precision, as before: the fp64 rule is for
// finite values only.
KAGENT_HD int element_verdict(double c, double r, double r64, bool has64, double atol, double rtol) {
  if (!rule_is_finite(c) || !rule_is_finite(r))
    return ((rule_is_nan(c) && rule_is_nan(r)) || c == r) ? kElementPasses : kElementNanMismatch;
  if (within_tolerance(c, r, atol, rtol)) return kElementPasses;
  if (has64 && rule_is_finite(r64)) {
    const double d64 = rule_abs(c - r64);
    if (d64 <= atol + rtol * rule_abs(r64) || d64 <= rule_abs(r - r64)) return kElementPassesFp64;
  }
  return kElementFails;
}

// Whether one constant passes every element of a reference whose finite values lie in
// [lo, hi], smallest magnitude min_abs: the midpoint is within half the spread of each, and each
// element allows at least atol + rtol * min_abs. Such a reference cannot tell a kernel that
// computes from one that writes a constant.
KAGENT_HD bool spread_within_tolerance(double lo, double hi, double min_abs, double atol, double rtol) {
  return rule_is_finite(lo) && rule_is_finite(hi) && (hi - lo) / 2 <= atol + rtol * min_abs;
}

}  // namespace kagent

#endif  // KAGENT_PROTOCOL_COMPARE_RULE_HPP
