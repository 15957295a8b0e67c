#pragma once
// Timing statistics and the stopping rule of docs/measurement.md. Pure functions: the runner (and the
// reference server's Python twin) feed them samples; unit tests run everywhere.
#include <string>
#include <vector>

namespace kagent {

struct TimingSummary {
  int n = 0;
  double median_ms = 0, mean_ms = 0, min_ms = 0, p10_ms = 0, p90_ms = 0, stdev_ms = 0;
  double rse_median = 0;    // relative standard error of the median (see relative_se_of_median)
  double gpu_time_s = 0;    // sum of the samples
  std::string stop_reason;  // why sampling stopped ("converged", "max samples", ...)
  // What the pass cost beside the samples' own time (kagent-runner's timing passes fill these):
  // warm-up runs, the GPU's busy time over the counted samples (each sample's set-up, i.e.
  // poison and L2 flush, included) and the pass's wall time (warm-up and re-checks included).
  int warmup_n = 0;
  double busy_s = 0;
  double wall_s = 0;
  // GPU busy time of the runner's previous timing pass, ended just before this one, counted
  // toward the warm-up's knobs.warmup_ms (clocks already up; MeasureKnobs::warmup_ms), 0 for none.
  double warmup_credit_ms = 0;
  // Where the sampling phase's wall time went, so that a pass slower than its samples can be
  // explained: span_s, GPU time by events from the first sample's begin event to the last read
  // sample's stop event (the samples, their set-up, the re-checks and any idle time between);
  // gap_s, the GPU time between one sample's stop event and the next one's begin event inside a
  // group (the harness queues nothing there); host_wait_s, the host's time blocked on the GPU for
  // samples and re-checks (near the phase's wall time: the GPU is the bound).
  double span_s = 0, gap_s = 0, host_wait_s = 0;
};

// Summary of samples in milliseconds (any order). Percentiles by linear interpolation.
TimingSummary summarize(const std::vector<double>& samples_ms);

// Relative standard error of the median, from the asymptotic formula for the median of a normal
// sample, SE = 1.2533 * stdev / sqrt(n), divided by the median. 0 for fewer than 2 samples.
double relative_se_of_median(const std::vector<double>& samples_ms);

// Every knob of the stopping rule; printed with the results so a number can be reproduced.
struct StopRule {
  int min_samples = 20;
  double min_gpu_s = 0.1;
  double target_rse = 0.005;  // 0.5 %
  int max_samples = 1000;
  double max_gpu_s = 2.0;
  double max_wall_s = 10.0;
  // min_gpu_s and max_gpu_s count each sample's whole GPU busy time (its set-up: inputs restored,
  // outputs poisoned, L2 flushed; then the timed span) rather than the timed span alone: the GPU
  // time the measurement occupies. The training preset's; a caller without busy times counts spans.
  bool count_setup = false;
};

struct StopDecision {
  bool stop = false;
  std::string reason;  // "converged", "max samples", "max GPU time", "max wall time"; empty when !stop
};

// Stop when (n >= min_samples and gpu time >= min_gpu_s and (RSE of the median <= target or
// SEM/mean <= target)), or when any cap is reached. GPU time: the samples' sum, or `busy_s` (the
// samples' GPU busy time, set-up included) where rule.count_setup and busy_s >= 0.
StopDecision should_stop(const std::vector<double>& samples_ms, double wall_s, const StopRule& rule,
                         double busy_s = -1);

// The measurement's knobs beside the stopping rule: explicit, settable (the measurement flags of
// eval, profile, check and bench) and echoed in every report, as nvbench echoes its own.
struct MeasureKnobs {
  int warmup_runs = 3;          // warm-up lasts at least this many samples ...
  double warmup_ms = 50.0;      // ... and at least this much GPU busy time (clocks ramp up)
  int check_every = 4;          // outputs re-checked after every N-th timed sample (and after the last)
  int cupti_samples = 5;        // timed samples of the CUPTI cross-check
  int per_launch_samples = 21;  // samples of the per-launch timing (the profile)
  // The GPU busy time of the runner's previous timing pass counts toward warmup_ms when that pass
  // ended at most this long before this one began: in a stream of evaluations the clocks are up
  // already, and only warmup_runs runs are this pass's own. 0: never.
  double warmup_credit_gap_ms = 50.0;
};

// Warm-up: at least knobs.warmup_runs runs and knobs.warmup_ms of GPU time.
bool warmup_done(int runs, double gpu_ms, const MeasureKnobs& knobs = {});

// The knobs in words: "warm-up >= 3 samples and >= 50 ms GPU busy; outputs re-checked every 4th
// sample; CUPTI cross-check 5 samples; per-launch timing 21 samples".
std::string knobs_text(const MeasureKnobs& k);

// A/B comparison of two kernels timed in alternation (`kagent check --baseline`): the median of
// the paired ratios new/old and a distribution-free confidence interval for it (order
// statistics: the median lies between the k-th smallest and k-th largest ratio with probability
// ~95% for k = floor((n - 1.96 sqrt(n)) / 2)). Pairing adjacent samples cancels slow drift
// (clocks, temperature) that comparing two separate medians would not.
struct RatioEstimate {
  int n = 0;
  double median = 0, low = 0, high = 0;
};
RatioEstimate paired_ratio(const std::vector<double>& numerator_ms, const std::vector<double>& denominator_ms,
                           double z = 1.96);

// When an A/B comparison can stop: at least `min_pairs`, then once the interval is narrower than
// `target_width` of the median (relative), or at `max_pairs`, or past `max_wall_s`.
struct AbRule {
  int min_pairs = 30;
  int max_pairs = 600;
  double target_width = 0.01;  // the whole 95% interval within 1 % of the ratio
  double max_wall_s = 20.0;
};
StopDecision ab_should_stop(const RatioEstimate& r, double wall_s, const AbRule& rule);

}  // namespace kagent
