#include "kagent/protocol/reference_quality.hpp"

#include <fmt/format.h>

#include "kagent/protocol/compare_rule.hpp"

namespace kagent {

std::optional<std::string> weak_reference(uint64_t numel, uint64_t zeros, double lo, double hi, double min_abs,
                                          const Tolerance& tol) {
  if (numel == 0) return std::nullopt;
  const double share = static_cast<double>(zeros) / static_cast<double>(numel);
  if (share >= kWeakZeroShare)
    return fmt::format(
        "is {:.1f}% exact zeros: a kernel that writes 0 there is right on those, so only {:.1f}% of the elements "
        "test what it computes",
        100 * share, 100 * (1 - share));
  if (spread_within_tolerance(lo, hi, min_abs, tol.atol, tol.rtol))
    return fmt::format("spans [{:.6g}, {:.6g}], within the tolerance ({}): the constant {:.6g} passes every element",
                       lo, hi, tolerance_text(tol), (lo + hi) / 2);
  return std::nullopt;
}

}  // namespace kagent
