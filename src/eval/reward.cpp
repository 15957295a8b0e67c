// The four-tier reward of docs/measurement.md (see kagent/eval/reward.hpp).
#include "kagent/eval/reward.hpp"

#include <fmt/format.h>

#include <cmath>

namespace kagent {
namespace {

bool usable(const std::optional<double>& ms) {
  return ms && std::isfinite(*ms) && *ms > 0;
}

// A ratio with 2 decimals, or, when that prints the same digits as `threshold`, with as many
// more (at least 3, at most 6) as it takes to tell them apart: "1.05x" next to "needs >= 1.053x"
// reads as a miss whether or not it is one.
std::string ratio(double x, double threshold) {
  int digits = 2;
  while (digits < 6 && fmt::format("{:.{}f}", x, digits) == fmt::format("{:.{}f}", threshold, digits) &&
         (x != threshold || digits < 3)) {
    ++digits;
  }
  return fmt::format("{:.{}f}x", x, digits);
}

// cand <= margin * compile, with a relative slack of 1e-12 so that a candidate built as exactly
// 0.95 times the compile time is not lost to the rounding of the product.
bool meets_compile_margin(double cand_ms, double compile_ms) {
  return cand_ms <= kCompileMargin * compile_ms * (1 + 1e-12);
}

}  // namespace

Reward compute_reward(bool compiled, bool correct, std::optional<double> candidate_ms, const Baselines& baselines,
                      const std::vector<Flag>& flags) {
  Reward r;
  if (!compiled) {
    r.reason = "did not compile";
    return r;
  }
  if (!correct) {
    // No speedups for an incorrect kernel: a time for wrong work is not a result.
    r.reason = "compiled but not correct";
    return r;
  }
  if (!usable(candidate_ms)) {
    r.tier = 1;
    r.reason = "correct, but not timed (tier 1)";
    return r;
  }
  if (const Flag* f = untrusted_timing(flags)) {
    // The time is not the kernel's: a speedup from it would reward whatever escaped the span.
    r.tier = 1;
    r.reason = fmt::format("correct, but its timing is not trusted: {} (tier 1)", flag_text(*f));
    return r;
  }
  const double cand = *candidate_ms;
  const double compile_needed = 1.0 / kCompileMargin;  // speedup vs compile for tier 3

  if (usable(baselines.eager_ms)) r.speedup_vs_eager = *baselines.eager_ms / cand;
  if (usable(baselines.compile_ms)) r.speedup_vs_compile = *baselines.compile_ms / cand;

  std::string eager_part;
  bool faster_than_eager = false;
  if (!r.speedup_vs_eager) {
    eager_part = "no eager baseline (not faster than eager by definition)";
  } else {
    // Compare the times themselves: equal is not faster.
    faster_than_eager = cand < *baselines.eager_ms;
    eager_part = faster_than_eager
                     ? fmt::format("{} faster than eager", ratio(*r.speedup_vs_eager, 1.0))
                     : fmt::format("not faster than eager ({} vs eager)", ratio(*r.speedup_vs_eager, 1.0));
  }

  std::string compile_part;
  bool meets_compile = false;
  if (!r.speedup_vs_compile) {
    compile_part = "no torch.compile baseline (tier 3 not reachable)";
  } else {
    meets_compile = meets_compile_margin(cand, *baselines.compile_ms);
    compile_part =
        fmt::format("{} vs torch.compile ({} {}x)", ratio(*r.speedup_vs_compile, compile_needed),
                    meets_compile ? "tier 3 reached at >=" : "tier 3 needs >=", fmt::format("{:.3f}", compile_needed));
  }

  r.tier = !faster_than_eager ? 1 : (meets_compile ? 3 : 2);
  r.reason = fmt::format("correct, {}, {}", eager_part, compile_part);
  return r;
}

}  // namespace kagent
