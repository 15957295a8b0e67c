// Timing statistics and the stopping rule (docs/measurement.md). Expected values are
// computed by hand (and agree with numpy: np.percentile's default linear method, np.std(ddof=1)).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <stdexcept>
#include <vector>

#include "kagent/protocol/protocol.hpp"
#include "kagent/protocol/stats.hpp"

namespace kagent {
namespace {

std::vector<double> one_to_ten() {
  return {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
}

// n samples alternating lo, hi, lo, hi, ...
std::vector<double> alternating(int n, double lo, double hi) {
  std::vector<double> v;
  for (int i = 0; i < n; ++i) v.push_back(i % 2 == 0 ? lo : hi);
  return v;
}

// ---- summarize ----

TEST(Summarize, OneToTen) {
  const TimingSummary s = summarize(one_to_ten());
  EXPECT_EQ(s.n, 10);
  EXPECT_DOUBLE_EQ(s.median_ms, 5.5);
  EXPECT_DOUBLE_EQ(s.mean_ms, 5.5);
  EXPECT_DOUBLE_EQ(s.min_ms, 1.0);
  EXPECT_NEAR(s.p10_ms, 1.9, 1e-12);  // position 0.1 * 9 = 0.9 -> 1 + 0.9 * (2 - 1)
  EXPECT_NEAR(s.p90_ms, 9.1, 1e-12);  // position 0.9 * 9 = 8.1 -> 9 + 0.1 * (10 - 9)
  // Sum of squared deviations from 5.5 is 82.5; sample variance 82.5 / 9.
  EXPECT_NEAR(s.stdev_ms, std::sqrt(82.5 / 9.0), 1e-12);
  EXPECT_NEAR(s.stdev_ms, 3.0276503540974917, 1e-12);
  EXPECT_NEAR(s.gpu_time_s, 0.055, 1e-15);
  EXPECT_NEAR(s.rse_median, 1.2533 * std::sqrt(82.5 / 9.0) / std::sqrt(10.0) / 5.5, 1e-12);
  EXPECT_TRUE(s.stop_reason.empty());
}

TEST(Summarize, OrderDoesNotMatter) {
  const TimingSummary a = summarize(one_to_ten());
  const TimingSummary b = summarize({7, 3, 10, 1, 9, 5, 2, 8, 4, 6});
  EXPECT_DOUBLE_EQ(a.median_ms, b.median_ms);
  EXPECT_DOUBLE_EQ(a.min_ms, b.min_ms);
  EXPECT_DOUBLE_EQ(a.p10_ms, b.p10_ms);
  EXPECT_DOUBLE_EQ(a.p90_ms, b.p90_ms);
  EXPECT_NEAR(a.stdev_ms, b.stdev_ms, 1e-12);
  EXPECT_NEAR(a.mean_ms, b.mean_ms, 1e-12);
}

TEST(Summarize, KnownStdev) {
  // Mean 5, squared deviations 9+1+1+1+0+0+4+16 = 32, sample variance 32 / 7.
  const TimingSummary s = summarize({2, 4, 4, 4, 5, 5, 7, 9});
  EXPECT_DOUBLE_EQ(s.mean_ms, 5.0);
  EXPECT_NEAR(s.stdev_ms, std::sqrt(32.0 / 7.0), 1e-12);
  EXPECT_DOUBLE_EQ(s.median_ms, 4.5);
  EXPECT_DOUBLE_EQ(s.min_ms, 2.0);
  EXPECT_NEAR(s.p10_ms, 3.4, 1e-12);  // position 0.7 -> 2 + 0.7 * (4 - 2)
  EXPECT_NEAR(s.p90_ms, 7.6, 1e-12);  // position 6.3 -> 7 + 0.3 * (9 - 7)
}

TEST(Summarize, OddCountMedianIsTheMiddleElement) {
  const TimingSummary s = summarize({3, 1, 2});
  EXPECT_DOUBLE_EQ(s.median_ms, 2.0);
  EXPECT_NEAR(s.p10_ms, 1.2, 1e-12);  // position 0.2
  EXPECT_NEAR(s.p90_ms, 2.8, 1e-12);  // position 1.8
  EXPECT_DOUBLE_EQ(s.stdev_ms, 1.0);
}

TEST(Summarize, EmptyIsAllZeros) {
  const TimingSummary s = summarize({});
  EXPECT_EQ(s.n, 0);
  EXPECT_EQ(s.median_ms, 0);
  EXPECT_EQ(s.mean_ms, 0);
  EXPECT_EQ(s.min_ms, 0);
  EXPECT_EQ(s.p10_ms, 0);
  EXPECT_EQ(s.p90_ms, 0);
  EXPECT_EQ(s.stdev_ms, 0);
  EXPECT_EQ(s.rse_median, 0);
  EXPECT_EQ(s.gpu_time_s, 0);
}

TEST(Summarize, OneSample) {
  const TimingSummary s = summarize({2.5});
  EXPECT_EQ(s.n, 1);
  EXPECT_DOUBLE_EQ(s.median_ms, 2.5);
  EXPECT_DOUBLE_EQ(s.mean_ms, 2.5);
  EXPECT_DOUBLE_EQ(s.min_ms, 2.5);
  EXPECT_DOUBLE_EQ(s.p10_ms, 2.5);
  EXPECT_DOUBLE_EQ(s.p90_ms, 2.5);
  EXPECT_EQ(s.stdev_ms, 0);
  EXPECT_EQ(s.rse_median, 0);
  EXPECT_DOUBLE_EQ(s.gpu_time_s, 0.0025);
}

TEST(Summarize, IdenticalSamplesHaveNoSpread) {
  const TimingSummary s = summarize(std::vector<double>(50, 0.1));
  EXPECT_EQ(s.stdev_ms, 0);
  EXPECT_EQ(s.rse_median, 0);
  EXPECT_DOUBLE_EQ(s.p10_ms, 0.1);
  EXPECT_DOUBLE_EQ(s.p90_ms, 0.1);
}

TEST(Summarize, NonFiniteOrNegativeSampleIsABug) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  EXPECT_THROW(summarize({1.0, nan, 2.0}), std::invalid_argument);
  EXPECT_THROW(summarize({inf}), std::invalid_argument);
  EXPECT_THROW(summarize({1.0, -inf}), std::invalid_argument);
  EXPECT_THROW(summarize({1.0, -0.5}), std::invalid_argument);
  EXPECT_THROW(relative_se_of_median({nan, nan}), std::invalid_argument);
  EXPECT_THROW(should_stop({nan}, 0.0, StopRule{}), std::invalid_argument);
  try {
    summarize({1.0, nan});
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("sample 1"), std::string::npos) << e.what();
  }
}

// ---- relative_se_of_median ----

TEST(RelativeSeOfMedian, Formula) {
  // {9, 10, 11}: median 10, sample stdev 1 -> 1.2533 / sqrt(3) / 10.
  EXPECT_NEAR(relative_se_of_median({9, 10, 11}), 1.2533 / std::sqrt(3.0) / 10.0, 1e-15);
  EXPECT_NEAR(relative_se_of_median({11, 9, 10}), 1.2533 / std::sqrt(3.0) / 10.0, 1e-15);
}

TEST(RelativeSeOfMedian, ZeroBelowTwoSamples) {
  EXPECT_EQ(relative_se_of_median({}), 0);
  EXPECT_EQ(relative_se_of_median({3.0}), 0);
}

TEST(RelativeSeOfMedian, ShrinksWithMoreSamples) {
  EXPECT_GT(relative_se_of_median(alternating(20, 9, 11)), relative_se_of_median(alternating(200, 9, 11)));
}

// ---- should_stop ----

TEST(ShouldStop, NotBeforeMinSamplesEvenIfConverged) {
  const StopRule rule;
  // 10 ms each: no spread, 0.19 s of GPU time after 19 samples; only the count is missing.
  const StopDecision d19 = should_stop(std::vector<double>(19, 10.0), 0.5, rule);
  EXPECT_FALSE(d19.stop);
  EXPECT_TRUE(d19.reason.empty());
  const StopDecision d20 = should_stop(std::vector<double>(20, 10.0), 0.5, rule);
  EXPECT_TRUE(d20.stop);
  EXPECT_EQ(d20.reason, "converged");
}

TEST(ShouldStop, NotBeforeMinGpuTimeEvenIfConverged) {
  const StopRule rule;
  // 1 ms each: converged from the start, but 0.1 s of GPU time takes 100 samples.
  EXPECT_FALSE(should_stop(std::vector<double>(20, 1.0), 0.1, rule).stop);
  EXPECT_FALSE(should_stop(std::vector<double>(99, 1.0), 0.5, rule).stop);
  const StopDecision d = should_stop(std::vector<double>(100, 1.0), 0.5, rule);
  EXPECT_TRUE(d.stop);
  EXPECT_EQ(d.reason, "converged");
}

TEST(ShouldStop, ARuleThatCountsSetUpReachesItsGpuTimeByBusyTime) {
  StopRule rule;
  rule.count_setup = true;
  // 1 ms timed, 2 ms busy each: 0.1 s after 50 samples, not 100.
  EXPECT_FALSE(should_stop(std::vector<double>(49, 1.0), 0.5, rule, 0.098).stop);
  EXPECT_EQ(should_stop(std::vector<double>(50, 1.0), 0.5, rule, 0.1).reason, "converged");
  // Its cap too: 2 s of busy time after 1000 ms of spans.
  rule.min_samples = 5000;
  rule.max_samples = 5000;
  EXPECT_EQ(should_stop(std::vector<double>(1000, 1.0), 0.5, rule, 2.0).reason, "max GPU time");
  // Without busy times (a caller that has none), the spans count.
  rule = StopRule{};
  rule.count_setup = true;
  EXPECT_FALSE(should_stop(std::vector<double>(50, 1.0), 0.5, rule).stop);
  // A rule that does not count set-up ignores them.
  EXPECT_FALSE(should_stop(std::vector<double>(50, 1.0), 0.5, StopRule{}, 0.1).stop);
  // The rule's JSON: count_setup round-trips, and a rule written before it reads as false.
  rule.count_setup = true;
  EXPECT_TRUE(nlohmann::json(rule).get<StopRule>().count_setup);
  nlohmann::json old = nlohmann::json(rule);
  old.erase("count_setup");
  EXPECT_FALSE(old.get<StopRule>().count_setup);
  old.erase("min_samples");
  EXPECT_THROW(old.get<StopRule>(), nlohmann::json::exception) << "the other fields stay required";
  EXPECT_NE(stop_rule_text(rule).find("GPU time (each sample's set-up included)"), std::string::npos);
}

TEST(ShouldStop, StopsOnConvergenceWithSmallNoise) {
  // 9.99 / 10.01: relative spread 0.1 %, far below the 0.5 % target at 20 samples.
  const StopDecision d = should_stop(alternating(20, 9.99, 10.01), 0.5, StopRule{});
  EXPECT_TRUE(d.stop);
  EXPECT_EQ(d.reason, "converged");
}

TEST(ShouldStop, ModerateNoiseConvergesOnlyWithMoreSamples) {
  // 9.5 / 10.5: stdev ~0.5, mean 10. SEM/mean = 0.5 / sqrt(n) / 10 is 0.008 at n = 40 and
  // 0.0035 at n = 200.
  EXPECT_FALSE(should_stop(alternating(40, 9.5, 10.5), 1.0, StopRule{}).stop);
  const StopDecision d = should_stop(alternating(200, 9.5, 10.5), 1.0, StopRule{});
  EXPECT_TRUE(d.stop);
  EXPECT_EQ(d.reason, "converged");
}

TEST(ShouldStop, NoisySamplesKeepGoing) {
  // 0.1 / 0.3 ms: stdev 0.1 around a mean of 0.2, i.e. 50 % noise; no cap is near.
  for (int n : {20, 100, 500, 999}) {
    const StopDecision d = should_stop(alternating(n, 0.1, 0.3), 1.0, StopRule{});
    EXPECT_FALSE(d.stop) << "n = " << n << ": " << d.reason;
  }
}

TEST(ShouldStop, MaxSamplesCap) {
  // 1000 noisy samples of 0.1 / 0.3 ms: 0.2 s of GPU time, not converged.
  const StopDecision d = should_stop(alternating(1000, 0.1, 0.3), 1.0, StopRule{});
  EXPECT_TRUE(d.stop);
  EXPECT_EQ(d.reason, "max samples");
}

TEST(ShouldStop, MaxGpuTimeCap) {
  // 50 / 150 ms: 19 samples are 1.85 s, 20 samples exactly 2 s; far from converged.
  EXPECT_FALSE(should_stop(alternating(19, 50, 150), 1.0, StopRule{}).stop);
  const StopDecision d = should_stop(alternating(20, 50, 150), 1.0, StopRule{});
  EXPECT_TRUE(d.stop);
  EXPECT_EQ(d.reason, "max GPU time");
}

TEST(ShouldStop, MaxGpuTimeCapBeforeMinSamples) {
  // One 2.5 s sample is already over the GPU time cap.
  const StopDecision d = should_stop({2500.0}, 3.0, StopRule{});
  EXPECT_TRUE(d.stop);
  EXPECT_EQ(d.reason, "max GPU time");
}

TEST(ShouldStop, MaxWallTimeCap) {
  const std::vector<double> few(5, 1.0);
  EXPECT_FALSE(should_stop(few, 9.99, StopRule{}).stop);
  const StopDecision d = should_stop(few, 10.0, StopRule{});
  EXPECT_TRUE(d.stop);
  EXPECT_EQ(d.reason, "max wall time");
  // Even with no samples at all (a candidate whose runs never finish timing).
  const StopDecision none = should_stop({}, 12.0, StopRule{});
  EXPECT_TRUE(none.stop);
  EXPECT_EQ(none.reason, "max wall time");
}

TEST(ShouldStop, NoSamplesNoStop) {
  EXPECT_FALSE(should_stop({}, 0.0, StopRule{}).stop);
}

TEST(ShouldStop, ConvergedWinsOverACapReachedTogether) {
  // 20 samples of 100 ms: converged and exactly at the 2 s GPU cap; the number is good.
  const StopDecision d = should_stop(std::vector<double>(20, 100.0), 1.0, StopRule{});
  EXPECT_TRUE(d.stop);
  EXPECT_EQ(d.reason, "converged");
}

TEST(ShouldStop, UsesTheRuleItIsGiven) {
  StopRule rule;
  rule.min_samples = 5;
  rule.min_gpu_s = 0.0;
  rule.target_rse = 0.25;
  rule.max_samples = 8;
  rule.max_gpu_s = 100.0;
  rule.max_wall_s = 1.0;
  EXPECT_FALSE(should_stop(std::vector<double>(4, 1.0), 0.0, rule).stop);
  EXPECT_EQ(should_stop(std::vector<double>(5, 1.0), 0.0, rule).reason, "converged");
  // 1, 3, 1, 3, 1, 3, 1: mean 13/7, stdev ~1.07, SEM/mean ~0.218 (converged under 0.25) ...
  EXPECT_EQ(should_stop(alternating(7, 1, 3), 0.0, rule).reason, "converged");
  // ... but not under a tight one, where the small caps stop it.
  rule.target_rse = 0.01;
  EXPECT_FALSE(should_stop(alternating(7, 1, 3), 0.0, rule).stop);
  EXPECT_EQ(should_stop(alternating(8, 1, 3), 0.0, rule).reason, "max samples");
  EXPECT_EQ(should_stop(alternating(7, 1, 3), 1.0, rule).reason, "max wall time");
}

// ---- warmup_done ----

TEST(Warmup, NeedsThreeRunsAndFiftyMilliseconds) {
  EXPECT_FALSE(warmup_done(0, 0.0));
  EXPECT_FALSE(warmup_done(2, 1000.0));   // long runs, but only two of them
  EXPECT_FALSE(warmup_done(3, 49.999));   // three runs, not quite 50 ms
  EXPECT_TRUE(warmup_done(3, 50.0));      // both boundaries exactly
  EXPECT_FALSE(warmup_done(1000, 10.0));  // many short runs
  EXPECT_TRUE(warmup_done(1000, 50.0));
  EXPECT_TRUE(warmup_done(4, 51.0));
}

TEST(PairedRatio, MedianAndOrderStatisticInterval) {
  // 100 pairs with ratios 0.951, 0.952, ..., 1.050 in scrambled order.
  std::vector<double> num, den;
  for (int i = 0; i < 100; ++i) {
    const int k = (i * 37) % 100;
    num.push_back(0.951 + 0.001 * k);
    den.push_back(1.0);
  }
  RatioEstimate r = paired_ratio(num, den);
  EXPECT_EQ(r.n, 100);
  EXPECT_NEAR(r.median, 1.0005, 1e-12);  // between the 50th and 51st
  // k = floor((100 - 1.96 * 10) / 2) = 40: the 41st smallest and the 41st largest.
  EXPECT_NEAR(r.low, 0.991, 1e-12);
  EXPECT_NEAR(r.high, 1.010, 1e-12);
}

TEST(PairedRatio, PairingCancelsDriftThatSeparateMediansWouldNot) {
  // Both kernels slow down by 20% over the run; the new one is 3% slower in every pair.
  std::vector<double> a, b;
  for (int i = 0; i < 60; ++i) {
    const double drift = 1.0 + 0.2 * i / 59.0;
    b.push_back(1.0 * drift);
    a.push_back(1.03 * drift);
  }
  RatioEstimate r = paired_ratio(a, b);
  EXPECT_NEAR(r.median, 1.03, 1e-9);
  EXPECT_NEAR(r.low, 1.03, 1e-9);
  EXPECT_NEAR(r.high, 1.03, 1e-9);
}

TEST(PairedRatio, IgnoresUnusablePairsAndSmallSamples) {
  EXPECT_EQ(paired_ratio({}, {}).n, 0);
  RatioEstimate r = paired_ratio({1.0, 2.0, 3.0}, {0.0, 1.0, 1.0});  // a zero denominator is dropped
  EXPECT_EQ(r.n, 2);
  EXPECT_DOUBLE_EQ(r.median, 2.5);
  EXPECT_DOUBLE_EQ(r.low, 2.0);  // too few pairs for a narrower interval: the extremes
  EXPECT_DOUBLE_EQ(r.high, 3.0);
}

TEST(AbStop, StopsOnConvergenceOrCaps) {
  AbRule rule;
  EXPECT_FALSE(ab_should_stop({10, 1.0, 0.999, 1.001}, 0.1, rule).stop);  // too few pairs
  EXPECT_EQ(ab_should_stop({30, 1.0, 0.996, 1.004}, 0.1, rule).reason, "converged");
  EXPECT_FALSE(ab_should_stop({30, 1.0, 0.98, 1.02}, 0.1, rule).stop);  // 4% wide
  EXPECT_EQ(ab_should_stop({rule.max_pairs, 1.0, 0.9, 1.1}, 0.1, rule).reason, "max pairs");
  EXPECT_EQ(ab_should_stop({30, 1.0, 0.9, 1.1}, rule.max_wall_s, rule).reason, "max wall time");
}

}  // namespace
}  // namespace kagent
