// The four-tier reward (docs/measurement.md): every tier boundary, missing baselines and
// timings, and the reason line.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>

#include "kagent/eval/reward.hpp"

namespace kagent {
namespace {

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

Baselines both(double eager_ms, double compile_ms) { return Baselines{eager_ms, compile_ms}; }

TEST(Reward, NotCompiled) {
  const Reward r = compute_reward(false, false, std::nullopt, both(10, 10));
  EXPECT_EQ(r.tier, -1);
  EXPECT_FALSE(r.speedup_vs_eager);
  EXPECT_FALSE(r.speedup_vs_compile);
  EXPECT_TRUE(contains(r.reason, "did not compile")) << r.reason;
}

TEST(Reward, NotCompiledIgnoresEverythingElse) {
  // A nonsense combination (correct but not compiled) is still tier -1.
  EXPECT_EQ(compute_reward(false, true, 1.0, both(10, 10)).tier, -1);
}

TEST(Reward, IncorrectButFastIsMinusOne) {
  const Reward r = compute_reward(true, false, 0.001, both(10, 10));
  EXPECT_EQ(r.tier, -1);
  // A time for wrong work is not a speedup.
  EXPECT_FALSE(r.speedup_vs_eager);
  EXPECT_FALSE(r.speedup_vs_compile);
  EXPECT_TRUE(contains(r.reason, "not correct")) << r.reason;
}

TEST(Reward, CorrectWithoutTimingIsOne) {
  const Reward r = compute_reward(true, true, std::nullopt, both(10, 10));
  EXPECT_EQ(r.tier, 1);
  EXPECT_FALSE(r.speedup_vs_eager);
  EXPECT_FALSE(r.speedup_vs_compile);
  EXPECT_TRUE(contains(r.reason, "not timed")) << r.reason;
}

TEST(Reward, NonPositiveOrNonFiniteCandidateTimeCountsAsNotTimed) {
  for (double ms : {0.0, -1.0, std::numeric_limits<double>::quiet_NaN(),
                    std::numeric_limits<double>::infinity()}) {
    const Reward r = compute_reward(true, true, ms, both(10, 10));
    EXPECT_EQ(r.tier, 1) << ms;
    EXPECT_FALSE(r.speedup_vs_eager) << ms;
    EXPECT_FALSE(r.speedup_vs_compile) << ms;
  }
}

TEST(Reward, SlowerThanEagerIsOne) {
  const Reward r = compute_reward(true, true, 20.0, both(10, 30));
  EXPECT_EQ(r.tier, 1);
  ASSERT_TRUE(r.speedup_vs_eager);
  EXPECT_DOUBLE_EQ(*r.speedup_vs_eager, 0.5);
  ASSERT_TRUE(r.speedup_vs_compile);
  EXPECT_DOUBLE_EQ(*r.speedup_vs_compile, 1.5);
  EXPECT_TRUE(contains(r.reason, "not faster than eager")) << r.reason;
}

TEST(Reward, ExactlyEagerIsNotFaster) {
  // Equal to eager: tier 1, even though torch.compile is beaten by far.
  const Reward r = compute_reward(true, true, 10.0, both(10, 100));
  EXPECT_EQ(r.tier, 1);
  ASSERT_TRUE(r.speedup_vs_eager);
  EXPECT_DOUBLE_EQ(*r.speedup_vs_eager, 1.0);
  EXPECT_TRUE(contains(r.reason, "not faster than eager")) << r.reason;
}

TEST(Reward, JustFasterThanEagerIsTwo) {
  const Reward r = compute_reward(true, true, 9.999, both(10, 10));
  EXPECT_EQ(r.tier, 2);
  EXPECT_GT(*r.speedup_vs_eager, 1.0);
}

TEST(Reward, FasterThanEagerNotCompileIsTwo) {
  // 1.02x vs torch.compile: faster than it, but not by the 1/0.95 = 1.053x tier 3 needs.
  const Reward r = compute_reward(true, true, 10.0, both(18.5, 10.2));
  EXPECT_EQ(r.tier, 2);
  EXPECT_DOUBLE_EQ(*r.speedup_vs_eager, 1.85);
  EXPECT_DOUBLE_EQ(*r.speedup_vs_compile, 1.02);
  EXPECT_EQ(r.reason, "correct, 1.85x faster than eager, 1.02x vs torch.compile (tier 3 needs >= 1.053x)");
}

TEST(Reward, ExactlyPoint95OfCompileIsThree) {
  const Reward r = compute_reward(true, true, 9.5, both(20, 10));
  EXPECT_EQ(r.tier, 3) << r.reason;
  EXPECT_TRUE(contains(r.reason, "tier 3 reached")) << r.reason;
  // The same boundary at a time whose product with 0.95 is not exact in binary.
  for (double compile_ms : {0.1, 0.37, 1.3, 7.77, 123.456}) {
    const double cand = kCompileMargin * compile_ms;
    EXPECT_EQ(compute_reward(true, true, cand, both(1000, compile_ms)).tier, 3) << compile_ms;
    EXPECT_EQ(compute_reward(true, true, 0.95 * compile_ms, both(1000, compile_ms)).tier, 3) << compile_ms;
  }
}

TEST(Reward, JustAbovePoint95OfCompileIsTwo) {
  const Reward at = compute_reward(true, true, 9.5, both(20, 10));
  const Reward above = compute_reward(true, true, 9.5 * (1 + 1e-9), both(20, 10));
  const Reward clearly_above = compute_reward(true, true, 9.51, both(20, 10));
  EXPECT_EQ(at.tier, 3);
  EXPECT_EQ(above.tier, 2) << above.reason;
  EXPECT_EQ(clearly_above.tier, 2);
  EXPECT_TRUE(contains(clearly_above.reason, "tier 3 needs >= 1.053x")) << clearly_above.reason;
  // 1.0515x is printed with enough digits not to look like the 1.053x it misses.
  EXPECT_TRUE(contains(clearly_above.reason, "1.052x vs torch.compile")) << clearly_above.reason;
}

TEST(Reward, FarBelowCompileIsThree) {
  const Reward r = compute_reward(true, true, 2.0, both(10, 5));
  EXPECT_EQ(r.tier, 3);
  EXPECT_DOUBLE_EQ(*r.speedup_vs_eager, 5.0);
  EXPECT_DOUBLE_EQ(*r.speedup_vs_compile, 2.5);
  EXPECT_EQ(r.reason, "correct, 5.00x faster than eager, 2.50x vs torch.compile (tier 3 reached at >= 1.053x)");
}

TEST(Reward, NoCompileBaselineMakesTierThreeUnreachable) {
  const Reward r = compute_reward(true, true, 1.0, Baselines{10.0, std::nullopt});
  EXPECT_EQ(r.tier, 2);
  EXPECT_DOUBLE_EQ(*r.speedup_vs_eager, 10.0);
  EXPECT_FALSE(r.speedup_vs_compile);
  EXPECT_TRUE(contains(r.reason, "no torch.compile baseline")) << r.reason;
  EXPECT_TRUE(contains(r.reason, "tier 3 not reachable")) << r.reason;
}

TEST(Reward, ZeroCompileBaselineIsNoBaseline) {
  const Reward r = compute_reward(true, true, 1.0, both(10, 0));
  EXPECT_EQ(r.tier, 2);
  EXPECT_FALSE(r.speedup_vs_compile);
  EXPECT_TRUE(contains(r.reason, "tier 3 not reachable")) << r.reason;
}

TEST(Reward, NoEagerBaselineIsTierOne) {
  // Without an eager time nothing can be "faster than eager"; the compile speedup is reported.
  const Reward r = compute_reward(true, true, 1.0, Baselines{std::nullopt, 10.0});
  EXPECT_EQ(r.tier, 1);
  EXPECT_FALSE(r.speedup_vs_eager);
  ASSERT_TRUE(r.speedup_vs_compile);
  EXPECT_DOUBLE_EQ(*r.speedup_vs_compile, 10.0);
  EXPECT_TRUE(contains(r.reason, "no eager baseline")) << r.reason;
}

TEST(Reward, NoBaselinesAtAll) {
  const Reward r = compute_reward(true, true, 1.0, Baselines{});
  EXPECT_EQ(r.tier, 1);
  EXPECT_FALSE(r.speedup_vs_eager);
  EXPECT_FALSE(r.speedup_vs_compile);
}

// CUPTI saw the plan's launches missing from the timed stream: the time is not the kernel's, so a
// kernel 10x "faster" than eager gets no speed tier and no speedup, and the reason says why.
TEST(Reward, UntrustedTimingWithholdsTheSpeedTiers) {
  const Flag untrusted{FlagKind::timing_untrusted, "", 8, 10,
                       "CUPTI saw 8 launches of the plan's kernels in 5 samples, expected 10"};
  const Reward r = compute_reward(true, true, 0.1, both(1.0, 0.5), {untrusted});
  EXPECT_EQ(r.tier, 1);
  EXPECT_FALSE(r.speedup_vs_eager);
  EXPECT_FALSE(r.speedup_vs_compile);
  EXPECT_TRUE(contains(r.reason, "correct, but its timing is not trusted: cupti: CUPTI saw 8 launches")) << r.reason;
  EXPECT_EQ(r.reason.find('\n'), std::string::npos);
  // Advisory flags change nothing: the same kernel with them is tier 3.
  const std::vector<Flag> advisory = {{FlagKind::below_memory_floor, "", 0.1, 0.2, "1 bytes at 1 GB/s peak"},
                                      {FlagKind::cupti_disagrees, "", 0.4, 0.5, "the timed span ..."},
                                      {FlagKind::weak_reference, "out", 0, 0, "is 97.0% exact zeros"}};
  EXPECT_EQ(compute_reward(true, true, 0.1, both(1.0, 0.5), advisory).tier, 3);
  // Wrong stays wrong whatever the flags.
  EXPECT_EQ(compute_reward(true, false, 0.1, both(1.0, 0.5), {untrusted}).tier, -1);
}

TEST(Reward, ReasonIsOneLine) {
  for (const Reward& r : {compute_reward(false, false, std::nullopt, Baselines{}),
                          compute_reward(true, false, 1.0, both(2, 2)),
                          compute_reward(true, true, std::nullopt, both(2, 2)),
                          compute_reward(true, true, 1.0, both(2, 2)),
                          compute_reward(true, true, 1.0, both(2, 1.5)),
                          compute_reward(true, true, 1.0, Baselines{})}) {
    EXPECT_FALSE(r.reason.empty());
    EXPECT_EQ(r.reason.find('\n'), std::string::npos) << r.reason;
  }
}

}  // namespace
}  // namespace kagent
