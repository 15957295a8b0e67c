// The presets' values. "training" keeps every check of the default protocol and shortens what
// dominates a warm evaluation of a small operator: the 0.1 s floor of timed GPU time (about a
// thousand samples of a 100 us kernel, each with an L2 flush before it) and the warm-up of 3 runs
// and 50 ms, which a GPU busy with the previous candidate does not need (1 run and 10 ms); and, for an operator of
// milliseconds, the floor of 20 samples (each with its inputs restored and outputs poisoned, gigabytes of copies for a
// large problem): 10 at least, and the median still stops only at 0.5% relative standard error. Its 20 ms
// of GPU time count each sample's set-up (StopRule::count_setup): the time the measurement occupies.
// benchmarks/preset_agreement.py compares its tiers and medians with the default's, candidate by candidate.
#include "kagent/protocol/measure_preset.hpp"

#include <fmt/format.h>

#include "kagent/common/error.hpp"

namespace kagent {

namespace {

// Shorter timing for RL rewards and sampling: the same checks, 20 ms of timed GPU time.
MeasurePreset training_preset() {
  MeasurePreset p{"training", {}, {}, TorchOps::fail};  // a reward for calling PyTorch teaches calling it
  p.stop_rule.min_samples = 10;
  p.stop_rule.min_gpu_s = 0.02;
  p.stop_rule.target_rse = 0.005;
  p.stop_rule.max_samples = 500;
  p.stop_rule.max_gpu_s = 0.5;
  p.stop_rule.max_wall_s = 3.0;
  // The 20 ms are the GPU time the samples occupy, each with its set-up: for a small operator the
  // poison of its outputs and the L2 flush take about as long as the kernel, and counting only the
  // kernel doubled the floor. The median and its RSE target are the default's.
  p.stop_rule.count_setup = true;
  p.knobs.warmup_runs = 1;  // the trials ran the candidate five times already
  p.knobs.warmup_ms = 10.0;
  return p;
}

}  // namespace

const std::vector<MeasurePreset>& measure_presets() {
  static const std::vector<MeasurePreset> presets = {
      {"default", {}, {}, std::nullopt},  // the default protocol: at least 20 samples and 0.1 s of timed GPU time
      training_preset(),
  };
  return presets;
}

std::string measure_preset_names() {
  std::string out;
  for (const MeasurePreset& p : measure_presets()) out += fmt::format("{}{}", out.empty() ? "" : ", ", p.name);
  return out;
}

const MeasurePreset* find_measure_preset(std::string_view name) {
  for (const MeasurePreset& p : measure_presets())
    if (p.name == name) return &p;
  return nullptr;
}

const MeasurePreset& measure_preset(std::string_view name, std::string_view where) {
  if (const MeasurePreset* p = find_measure_preset(name)) return *p;
  throw InputError(fmt::format("{} {}: expected one of {}", where, name, measure_preset_names()));
}

}  // namespace kagent
