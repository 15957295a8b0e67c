#pragma once
// Whether a reference output can tell a right kernel from a wrong one (docs/measurement.md). The
// degenerate flag (all zero, constant) says it cannot at all; the weak-reference flag says it
// cannot on most elements: mostly exact zeros (level2/9 ends in ReLU after subtracting 2.0, so
// most of its outputs are 0 whatever the kernel computes before the clip), or a spread within the
// tolerance (one constant passes every element). A flag, not a failure: the candidate is not at
// fault, but a pass against such a reference proves less.
#include <cstdint>
#include <optional>
#include <string>

#include "kagent/spec/op.hpp"

namespace kagent {

// At or above this share of exact zeros an output is flagged: at least half of its elements are
// then right for a kernel that writes zeros, so the check stands on the other half or less (and on
// none of what the kernel computes before a clip to 0).
inline constexpr double kWeakZeroShare = 0.5;

// Why the output is a weak reference, or nullopt. numel elements of which zeros are exactly 0;
// lo, hi, min_abs: the smallest, largest and smallest-magnitude finite values.
std::optional<std::string> weak_reference(uint64_t numel, uint64_t zeros, double lo, double hi, double min_abs,
                                          const Tolerance& tol);

}  // namespace kagent
