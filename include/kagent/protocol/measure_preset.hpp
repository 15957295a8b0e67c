#pragma once
// Named sets of the stopping rule and the knobs beside it (`--preset`, a request's
// "measure": {"preset": ...}): the default protocol, and a shorter one for the volume of RL training
// and sampling. A preset sets where the measurement stops and how long it warms up, and the training
// preset what PyTorch's operators in a ModelNew solution earn (fail); what is checked (every trial,
// the output re-checks, the guard bands, the CUPTI cross-check) is the same under every preset. Flags given beside a
// preset override its values one by one.
#include <string>
#include <string_view>
#include <vector>

#include <optional>

#include "kagent/protocol/stats.hpp"
#include "kagent/protocol/torch_ops.hpp"

namespace kagent {

struct MeasurePreset {
  std::string_view name;
  StopRule stop_rule;
  MeasureKnobs knobs;
  // The torch-operators policy it sets (training: fail, as RL needs); nullopt: the command's own.
  std::optional<TorchOps> torch_ops;
};

// Every preset, "default" first.
const std::vector<MeasurePreset>& measure_presets();
// The preset of this name, or nullptr.
const MeasurePreset* find_measure_preset(std::string_view name);
// The preset of this name; InputError naming the presets there are ("where" names the flag or field).
const MeasurePreset& measure_preset(std::string_view name, std::string_view where = "--preset");
// "default", "training": for messages and --help.
std::string measure_preset_names();

}  // namespace kagent
