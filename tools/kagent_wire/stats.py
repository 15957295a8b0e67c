"""Timing statistics and the stopping rule: the Python twin of src/protocol/stats.cpp, so eager and
torch.compile baselines are measured by the same rule as candidates (docs/measurement.md)."""

import math

# Every knob, with the C++ defaults (include/kagent/protocol/stats.hpp StopRule).
DEFAULT_RULE = {
    "min_samples": 20,
    "min_gpu_s": 0.1,
    "target_rse": 0.005,
    "max_samples": 1000,
    "max_gpu_s": 2.0,
    "max_wall_s": 10.0,
    # min_gpu_s and max_gpu_s count each sample's whole GPU busy time (set-up included) where the
    # caller passes it (busy_s); the training preset's.
    "count_setup": False,
}


def _percentile(sorted_v, q):
    """Linear interpolation between order statistics (numpy's default), q in [0, 1]."""
    if len(sorted_v) == 1:
        return sorted_v[0]
    pos = q * (len(sorted_v) - 1)
    lo = math.floor(pos)
    hi = min(lo + 1, len(sorted_v) - 1)
    return sorted_v[lo] + (sorted_v[hi] - sorted_v[lo]) * (pos - lo)


def _stdev(v):
    if len(v) < 2:
        return 0.0
    m = sum(v) / len(v)
    return math.sqrt(sum((x - m) ** 2 for x in v) / (len(v) - 1))


def relative_se_of_median(samples_ms):
    if len(samples_ms) < 2:
        return 0.0
    med = _percentile(sorted(samples_ms), 0.5)
    if med <= 0:
        return math.inf
    return 1.2533 * _stdev(samples_ms) / math.sqrt(len(samples_ms)) / med


def summarize(samples_ms):
    v = sorted(samples_ms)
    if not v:
        return {"n": 0, "median_ms": 0.0, "mean_ms": 0.0, "min_ms": 0.0, "p10_ms": 0.0, "p90_ms": 0.0,
                "stdev_ms": 0.0, "rse_median": 0.0, "gpu_time_s": 0.0, "stop_reason": ""}
    return {
        "n": len(v),
        "median_ms": _percentile(v, 0.5),
        "mean_ms": sum(v) / len(v),
        "min_ms": v[0],
        "p10_ms": _percentile(v, 0.1),
        "p90_ms": _percentile(v, 0.9),
        "stdev_ms": _stdev(v),
        "rse_median": relative_se_of_median(v),
        "gpu_time_s": sum(v) / 1000.0,
        "stop_reason": "",
    }


def should_stop(samples_ms, wall_s, rule, busy_s=None):
    """Returns the reason to stop, or None to keep sampling. GPU time: the samples' sum, or `busy_s`
    (their GPU busy time, set-up included) where the rule counts set-up and busy_s is given."""
    n = len(samples_ms)
    gpu_s = sum(samples_ms) / 1000.0
    if rule.get("count_setup") and busy_s is not None:
        gpu_s = busy_s
    if n >= rule["min_samples"] and gpu_s >= rule["min_gpu_s"] and n >= 2:
        mean = sum(samples_ms) / n
        sem_rel = _stdev(samples_ms) / math.sqrt(n) / mean if mean > 0 else math.inf
        if relative_se_of_median(samples_ms) <= rule["target_rse"] or sem_rel <= rule["target_rse"]:
            return "converged"
    if n >= rule["max_samples"]:
        return "max samples"
    if gpu_s >= rule["max_gpu_s"]:
        return "max GPU time"
    if wall_s >= rule["max_wall_s"]:
        return "max wall time"
    return None


def warmup_done(runs, busy_ms):
    return runs >= 3 and busy_ms >= 50.0
