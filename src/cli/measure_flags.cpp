// The measurement's knobs as flags, declared once for every command that times a candidate
// (eval, profile, check, bench with solutions): the stopping rule and the knobs beside it. Every
// value is echoed in the report's "timing:" and "knobs:" lines, and recorded in the outcome.
#include <fmt/format.h>

#include "commands.hpp"
#include "kagent/common/error.hpp"
#include "kagent/protocol/measure_preset.hpp"

namespace kagent::cli {

void add_measure_flags(CLI::App* sub, MeasureFlags* m) {
  const std::string g = "Measurement";
  StopRule& s = m->stop_rule;
  MeasureKnobs& k = m->knobs;
  // Declared first: CLI11 runs the options' callbacks in declaration order, so the preset's values
  // are in place before the flags given beside it override them one by one.
  sub->add_option_function<std::string>(
         "--preset",
         [m](const std::string& name) {
           const MeasurePreset* found = nullptr;
           try {
             found = &measure_preset(name);
           } catch (const InputError& e) {
             throw CLI::ValidationError(e.what());  // a usage error, reported by the parser (exit 2)
           }
           const MeasurePreset& p = *found;
           m->preset = std::string(p.name);
           m->stop_rule = p.stop_rule;
           m->knobs = p.knobs;
           if (p.torch_ops) m->torch_ops = p.torch_ops;
         },
         fmt::format("A named measurement: {} (default: default; flags given beside it override its values)",
                     measure_preset_names()))
      ->group(g);
  sub->add_option("--min-samples", s.min_samples, "Timed samples at least (default 20)")
      ->check(CLI::PositiveNumber)
      ->group(g);
  sub->add_option("--max-samples", s.max_samples, "Timed samples at most (default 1000)")
      ->check(CLI::PositiveNumber)
      ->group(g);
  sub->add_option("--min-gpu-s", s.min_gpu_s, "Timed GPU seconds at least (default 0.1)")
      ->check(CLI::NonNegativeNumber)
      ->group(g);
  sub->add_option("--max-gpu-s", s.max_gpu_s, "Timed GPU seconds at most (default 2)")
      ->check(CLI::PositiveNumber)
      ->group(g);
  sub->add_option("--count-setup", s.count_setup,
                  "Count each sample's set-up (inputs restored, outputs poisoned, L2 flushed) toward --min-gpu-s "
                  "and --max-gpu-s: true or false (default false; the training preset's true)")
      ->group(g);
  sub->add_option("--max-wall-s", s.max_wall_s, "Wall seconds of timing at most (default 10)")
      ->check(CLI::PositiveNumber)
      ->group(g);
  sub->add_option("--target-rse", s.target_rse,
                  "Stop once the median's relative standard error is at most this (default 0.005)")
      ->check(CLI::Range(0.0, 1.0))
      ->group(g);
  sub->add_option("--warmup-samples", k.warmup_runs, "Warm-up samples at least (default 3)")
      ->check(CLI::NonNegativeNumber)
      ->group(g);
  sub->add_option("--warmup-ms", k.warmup_ms, "Warm-up GPU busy milliseconds at least (default 50)")
      ->check(CLI::NonNegativeNumber)
      ->group(g);
  sub->add_option("--warmup-credit-gap-ms", k.warmup_credit_gap_ms,
                  "Count the runner's previous timing pass's GPU busy time toward --warmup-ms when it ended at most "
                  "this long before (default 50; 0: never)")
      ->check(CLI::NonNegativeNumber)
      ->group(g);
  sub->add_option("--check-every", k.check_every,
                  "Re-check the outputs after every N-th timed sample, and after the last (default 4)")
      ->check(CLI::PositiveNumber)
      ->group(g);
  sub->add_option("--cupti-samples", k.cupti_samples, "Samples of the CUPTI cross-check (default 5)")
      ->check(CLI::PositiveNumber)
      ->group(g);
  sub->add_option("--launch-samples", k.per_launch_samples, "Samples of the per-launch timing (default 21)")
      ->check(CLI::PositiveNumber)
      ->group(g);
  auto* policy =
      sub->add_option_function<std::string>(
             "--torch-ops",
             [m](const std::string& name) {
               auto p = parse_torch_ops(name);
               if (!p)
                 throw CLI::ValidationError(fmt::format("--torch-ops: '{}' is not one of {}", name, kTorchOpsChoices));
               m->torch_ops = *p;
             },
             "ModelNew solutions whose work PyTorch's own operators do (anything but allocating or "
             "filling memory): fail (tier -1, the operators named), cap (tier 1 when they carry most of the "
             "kernel time or no kernel of the solution's own ran) or allow (speed scores them; the record "
             "lists them). Default: cap, fail with --preset training")
          ->group(g);
  sub->add_flag_callback(
         "--allow-torch-ops", [m] { m->torch_ops = TorchOps::allow; }, "The same as --torch-ops allow")
      ->excludes(policy)
      ->group(g);
  sub->add_option_function<std::string>(
         "--baselines",
         [m](const std::string& path) {
           try {
             m->baselines = std::make_shared<const BaselinesFile>(BaselinesFile::read(path));
           } catch (const InputError& e) {
             throw CLI::ValidationError(e.what());
           }
         },
         "PyTorch references: score against the eager and torch.compile times in this file (or the *.json "
         "files of this folder) that `kagent ref --export-baselines` wrote, instead of measuring them: every "
         "node of a cluster scores alike. A problem without an entry for this GPU model and torch version is "
         "refused")
      ->group(g);
}

void MeasureFlags::validate() const {
  if (stop_rule.max_samples < stop_rule.min_samples)
    throw InputError(
        fmt::format("--max-samples {} is below --min-samples {}", stop_rule.max_samples, stop_rule.min_samples));
  if (stop_rule.max_gpu_s < stop_rule.min_gpu_s)
    throw InputError(fmt::format("--max-gpu-s {} is below --min-gpu-s {}", stop_rule.max_gpu_s, stop_rule.min_gpu_s));
}

void MeasureFlags::apply(EvalOptions& o) const {
  validate();
  o.stop_rule = stop_rule;
  o.knobs = knobs;
  o.torch_ops = torch_ops_or_default();
  o.baselines = baselines;
}

}  // namespace kagent::cli
