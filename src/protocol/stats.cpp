// Timing statistics and the stopping rule of docs/measurement.md (see kagent/protocol/stats.hpp).
#include "kagent/protocol/stats.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace kagent {
namespace {

// A timing sample is a device-event interval: finite and >= 0. Anything else is a bug in the
// caller (an unset event, a bad conversion), so it is reported, never silently dropped.
void check_samples(const std::vector<double>& samples_ms) {
  for (size_t i = 0; i < samples_ms.size(); ++i) {
    const double x = samples_ms[i];
    if (!std::isfinite(x) || x < 0) {
      throw std::invalid_argument(fmt::format("timing sample {} is {} ms; samples must be finite and >= 0", i, x));
    }
  }
}

// Percentile p in [0, 1] of sorted (non-empty) values, by linear interpolation between the
// order statistics at positions floor(p*(n-1)) and ceil(p*(n-1)) (numpy's default "linear").
double percentile_sorted(const std::vector<double>& sorted, double p) {
  const double pos = p * static_cast<double>(sorted.size() - 1);
  const size_t lo = static_cast<size_t>(std::floor(pos));
  const size_t hi = std::min(lo + 1, sorted.size() - 1);
  const double frac = pos - static_cast<double>(lo);
  return sorted[lo] + (sorted[hi] - sorted[lo]) * frac;
}

double sum_of(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x;
  return s;
}

// Sample standard deviation (divisor n - 1), two-pass; 0 for fewer than 2 samples.
double sample_stdev(const std::vector<double>& v, double mean) {
  if (v.size() < 2) return 0;
  double ss = 0;
  for (double x : v) ss += (x - mean) * (x - mean);
  return std::sqrt(ss / static_cast<double>(v.size() - 1));
}

// Relative SE of the median from already computed parts. A zero median with a spread is not a
// measurement anyone can converge on: infinity, so only a cap stops sampling.
double rse_median_of(size_t n, double median, double stdev) {
  if (n < 2 || stdev == 0) return 0;
  if (median <= 0) return INFINITY;
  return 1.2533 * stdev / std::sqrt(static_cast<double>(n)) / median;
}

}  // namespace

TimingSummary summarize(const std::vector<double>& samples_ms) {
  check_samples(samples_ms);
  TimingSummary s;
  if (samples_ms.empty()) return s;
  std::vector<double> sorted = samples_ms;
  std::sort(sorted.begin(), sorted.end());
  const double total = sum_of(sorted);
  s.n = static_cast<int>(sorted.size());
  // Identical samples have no spread; summing them can round the mean off the value itself.
  const bool all_equal = sorted.front() == sorted.back();
  s.mean_ms = all_equal ? sorted.front() : total / static_cast<double>(sorted.size());
  s.median_ms = percentile_sorted(sorted, 0.5);
  s.min_ms = sorted.front();
  s.p10_ms = percentile_sorted(sorted, 0.1);
  s.p90_ms = percentile_sorted(sorted, 0.9);
  s.stdev_ms = all_equal ? 0.0 : sample_stdev(sorted, s.mean_ms);
  s.rse_median = rse_median_of(sorted.size(), s.median_ms, s.stdev_ms);
  s.gpu_time_s = total / 1000.0;
  return s;
}

double relative_se_of_median(const std::vector<double>& samples_ms) {
  const TimingSummary s = summarize(samples_ms);
  return s.rse_median;
}

StopDecision should_stop(const std::vector<double>& samples_ms, double wall_s, const StopRule& rule, double busy_s) {
  const TimingSummary s = summarize(samples_ms);
  const double gpu_s = rule.count_setup && busy_s >= 0 ? busy_s : s.gpu_time_s;

  // Converged takes precedence over a cap reached at the same sample: the number is good.
  if (s.n >= rule.min_samples && gpu_s >= rule.min_gpu_s && s.n >= 2) {
    const double sem_over_mean = s.mean_ms > 0 ? s.stdev_ms / std::sqrt(static_cast<double>(s.n)) / s.mean_ms
                                               : (s.stdev_ms == 0 ? 0.0 : INFINITY);
    if (s.rse_median <= rule.target_rse || sem_over_mean <= rule.target_rse) {
      return {true, "converged"};
    }
  }
  if (s.n >= rule.max_samples) return {true, "max samples"};
  if (gpu_s >= rule.max_gpu_s) return {true, "max GPU time"};
  if (wall_s >= rule.max_wall_s) return {true, "max wall time"};
  return {false, ""};
}

bool warmup_done(int runs, double gpu_ms, const MeasureKnobs& knobs) {
  return runs >= knobs.warmup_runs && gpu_ms >= knobs.warmup_ms;
}

std::string knobs_text(const MeasureKnobs& k) {
  return fmt::format(
      "warm-up >= {} samples and >= {} ms GPU busy ({}); outputs re-checked every {} sample(s); CUPTI "
      "cross-check {} samples; per-launch timing {} samples",
      k.warmup_runs, k.warmup_ms,
      k.warmup_credit_gap_ms > 0
          ? fmt::format("the previous pass's busy time counted when it ended within {} ms", k.warmup_credit_gap_ms)
          : std::string("none counted from a previous pass"),
      k.check_every, k.cupti_samples, k.per_launch_samples);
}

RatioEstimate paired_ratio(const std::vector<double>& num, const std::vector<double>& den, double z) {
  RatioEstimate r;
  std::vector<double> ratios;
  for (size_t i = 0; i < num.size() && i < den.size(); ++i)
    if (den[i] > 0 && std::isfinite(num[i] / den[i])) ratios.push_back(num[i] / den[i]);
  r.n = static_cast<int>(ratios.size());
  if (ratios.empty()) return r;
  std::sort(ratios.begin(), ratios.end());
  const size_t n = ratios.size();
  r.median = n % 2 ? ratios[n / 2] : 0.5 * (ratios[n / 2 - 1] + ratios[n / 2]);
  const double k = std::floor((static_cast<double>(n) - z * std::sqrt(static_cast<double>(n))) / 2);
  const size_t lo = k < 0 ? 0 : static_cast<size_t>(k);
  r.low = ratios[std::min(lo, n - 1)];
  r.high = ratios[n - 1 - std::min(lo, n - 1)];
  return r;
}

StopDecision ab_should_stop(const RatioEstimate& r, double wall_s, const AbRule& rule) {
  if (r.n >= rule.max_pairs) return {true, "max pairs"};
  if (wall_s >= rule.max_wall_s) return {true, "max wall time"};
  if (r.n >= rule.min_pairs && r.median > 0 && (r.high - r.low) / r.median <= rule.target_width)
    return {true, "converged"};
  return {};
}

}  // namespace kagent
