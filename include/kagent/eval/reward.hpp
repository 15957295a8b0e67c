#pragma once
// The four-tier reward of the CUDA Agent paper (docs/measurement.md), plus continuous speedups.
#include <optional>
#include <string>
#include <vector>

#include "kagent/protocol/flags.hpp"

namespace kagent {

struct Baselines {
  std::optional<double> eager_ms;    // PyTorch eager, or a native reference plan's own time
  std::optional<double> compile_ms;  // torch.compile, or op.json's compile_baseline_ms
};

struct Reward {
  int tier = -1;                             // -1, 1, 2 or 3
  std::optional<double> speedup_vs_eager;    // eager_ms / candidate_ms
  std::optional<double> speedup_vs_compile;  // compile_ms / candidate_ms
  std::string reason;                        // one line: why this tier
};

// Tier -1: not compiled, or not correct. 1: correct, not faster than eager. 2: correct and
// faster than eager. 3: also candidate_ms <= 0.95 * compile_ms. Without a compile baseline tier 3
// is unreachable (the reason says so). A correct candidate without a timing is tier 1, and so is
// one whose timing a flag says is not the kernel's time (untrusts_timing: CUPTI saw the work
// outside the timed span): no speedups then, the reason names the flag. Other flags (a weak
// reference, the memory floor) are advisory and change nothing here.
Reward compute_reward(bool compiled, bool correct, std::optional<double> candidate_ms, const Baselines& baselines,
                      const std::vector<Flag>& flags = {});

// The factor a candidate must reach against torch.compile for tier 3.
inline constexpr double kCompileMargin = 0.95;

}  // namespace kagent
