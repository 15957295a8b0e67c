#include "kagent/agent/module_init.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>

namespace kagent::agent {

namespace {

using K = ParamCheck::Kind;

// The entries. Sources: torch 2.x, torch/nn/modules. nn.Linear and _ConvNd: kaiming_uniform_ with
// a = sqrt(5), whose bound gain * sqrt(3 / fan_in) is 1/sqrt(fan_in), and the bias uniform in
// +-1/sqrt(fan_in); init._calculate_fan_in_and_fan_out takes fan_in = weight.size(1) x the
// kernel's elements, which for a transposed convolution (weight [in, out/groups, k...]) is the
// output channels. _NormBase (BatchNorm, InstanceNorm): ones_ / zeros_ when affine, running_var
// 1. MultiheadAttention._reset_parameters: xavier_uniform_ on in_proj_weight (fan_in E, fan_out
// 3E), constant_ 0 on in_proj_bias and out_proj.bias; out_proj.weight keeps nn.Linear's. RNNBase
// and RNNCellBase: every parameter uniform in +-1/sqrt(hidden_size).
std::vector<ModuleInit> make_entries() {
  const double r = 1.0;
  return {
      {{"Linear"},
       "nn.Linear(in_features, out_features): weight [out_features, in_features] and bias [out_features] uniform in "
       "+-1/sqrt(in_features).",
       "nn.Linear(64, 48)",
       {{"weight", K::uniform, r / 8}, {"bias", K::uniform, r / 8}}},
      {{"Conv1d", "Conv2d", "Conv3d"},
       "nn.Conv1d/2d/3d: weight [out_channels, in_channels/groups, kernel...] and bias [out_channels] uniform in "
       "+-1/sqrt(fan_in), fan_in = in_channels/groups x the kernel's elements.",
       "nn.Conv2d(8, 64, 3, groups=2)",
       {{"weight", K::uniform, r / 6}, {"bias", K::uniform, r / 6}}},
      {{"ConvTranspose1d", "ConvTranspose2d", "ConvTranspose3d"},
       "nn.ConvTranspose1d/2d/3d: weight [in_channels, out_channels/groups, kernel...] and bias [out_channels] "
       "uniform in +-1/sqrt(fan_in), where torch takes fan_in from the weight's second dimension: fan_in = "
       "out_channels/groups x the kernel's elements (not in_channels).",
       "nn.ConvTranspose2d(8, 64, 3, groups=2)",
       {{"weight", K::uniform, 1 / std::sqrt(288.0)}, {"bias", K::uniform, 1 / std::sqrt(288.0)}}},
      {{"BatchNorm1d", "BatchNorm2d", "BatchNorm3d"},
       "nn.BatchNorm1d/2d/3d: weight 1 and bias 0 (affine=True by default), running_mean 0 and running_var 1; in "
       "training mode, KernelBench's, it normalizes with the batch's own mean and biased variance over every "
       "dimension but the channel's.",
       "nn.BatchNorm2d(16)",
       {{"weight", K::ones, 0}, {"bias", K::zeros, 0}, {"running_mean", K::zeros, 0}, {"running_var", K::ones, 0}}},
      {{"LayerNorm"},
       "nn.LayerNorm(normalized_shape): weight 1 and bias 0 of normalized_shape (elementwise_affine=True by "
       "default); the mean and biased variance are over the last len(normalized_shape) dimensions.",
       "nn.LayerNorm([4, 8])",
       {{"weight", K::ones, 0}, {"bias", K::zeros, 0}}},
      {{"GroupNorm"},
       "nn.GroupNorm(num_groups, num_channels): weight 1 and bias 0 per channel (affine=True by default); the mean "
       "and biased variance are per sample over each group's channels and spatial elements.",
       "nn.GroupNorm(4, 16)",
       {{"weight", K::ones, 0}, {"bias", K::zeros, 0}}},
      {{"InstanceNorm1d", "InstanceNorm2d", "InstanceNorm3d"},
       "nn.InstanceNorm1d/2d/3d: affine=False and track_running_stats=False by default, so no weight, bias or "
       "running buffers unless the reference asks for them (then weight 1, bias 0); each sample's channel is "
       "normalized over its own spatial elements with the biased variance, in training and eval alike.",
       "nn.InstanceNorm2d(16)",
       {{"weight", K::absent, 0}, {"bias", K::absent, 0}, {"running_mean", K::absent, 0}}},
      {{"MultiheadAttention"},
       "nn.MultiheadAttention(embed_dim E, num_heads): in_proj_weight [3E, E] xavier-uniform in +-sqrt(6 / (E + 3E)) "
       "= +-sqrt(1.5 / E), in_proj_bias 0, out_proj.weight [E, E] uniform in +-1/sqrt(E) (nn.Linear's), "
       "out_proj.bias 0.",
       "nn.MultiheadAttention(64, 4)",
       {{"in_proj_weight", K::uniform, std::sqrt(1.5 / 64)},
        {"in_proj_bias", K::zeros, 0},
        {"out_proj.weight", K::uniform, r / 8},
        {"out_proj.bias", K::zeros, 0}}},
      {{"LSTM", "GRU", "RNN", "LSTMCell", "GRUCell", "RNNCell"},
       "nn.LSTM/GRU/RNN and their Cell forms: every weight_ih, weight_hh, bias_ih and bias_hh uniform in "
       "+-1/sqrt(hidden_size).",
       "nn.LSTM(16, 64, 2)",
       {{"weight_ih_l0", K::uniform, r / 8},
        {"weight_hh_l0", K::uniform, r / 8},
        {"bias_ih_l0", K::uniform, r / 8},
        {"bias_hh_l1", K::uniform, r / 8},
        {"weight_ih_l1", K::uniform, r / 8}}},
      {{"TransformerEncoderLayer"},
       "nn.TransformerEncoderLayer(d_model, nhead, dim_feedforward=2048, dropout=0.1): self_attn an "
       "nn.MultiheadAttention, linear1 [dim_feedforward, d_model] and linear2 nn.Linear layers, norm1 and norm2 "
       "nn.LayerNorm, each initialized as its own note says; its dropout is active in training mode.",
       "nn.TransformerEncoderLayer(64, 4, 128)",
       {{"self_attn.in_proj_weight", K::uniform, std::sqrt(1.5 / 64)},
        {"self_attn.in_proj_bias", K::zeros, 0},
        {"linear1.weight", K::uniform, r / 8},
        {"linear2.weight", K::uniform, 1 / std::sqrt(128.0)},
        {"norm1.weight", K::ones, 0},
        {"norm2.bias", K::zeros, 0}}},
  };
}

// The entries whose notes a composite module brings with its own.
const std::vector<std::pair<std::string, std::vector<std::string>>>& parts() {
  static const std::vector<std::pair<std::string, std::vector<std::string>>> p = {
      {"TransformerEncoderLayer", {"MultiheadAttention", "Linear", "LayerNorm"}},
      {"TransformerEncoder", {"TransformerEncoderLayer", "MultiheadAttention", "Linear", "LayerNorm"}},
  };
  return p;
}

bool ident(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
}

}  // namespace

const std::vector<ModuleInit>& module_inits() {
  static const std::vector<ModuleInit> entries = make_entries();
  return entries;
}

std::vector<std::string> modules_named(std::string_view source) {
  std::vector<std::string> names;
  for (size_t at = source.find("nn."); at != std::string_view::npos; at = source.find("nn.", at + 3)) {
    if (at > 0 && ident(source[at - 1])) continue;  // "xnn.": another name; "torch.nn." is one
    size_t end = at + 3;
    while (end < source.size() && ident(source[end])) ++end;
    if (end == at + 3 || end >= source.size() || source[end] != '(') continue;
    const std::string name(source.substr(at + 3, end - at - 3));
    if (!std::isupper(static_cast<unsigned char>(name[0]))) continue;  // nn.functional, nn.init
    if (std::find(names.begin(), names.end(), name) == names.end()) names.push_back(name);
  }
  return names;
}

std::string module_init_notes(std::string_view source) {
  std::vector<std::string> wanted = modules_named(source);
  for (const auto& [composite, its] : parts())
    if (std::find(wanted.begin(), wanted.end(), composite) != wanted.end())
      for (const std::string& p : its)
        if (std::find(wanted.begin(), wanted.end(), p) == wanted.end()) wanted.push_back(p);
  std::string notes;
  for (const ModuleInit& e : module_inits()) {
    const bool named = std::any_of(e.modules.begin(), e.modules.end(), [&](const std::string& m) {
      return std::find(wanted.begin(), wanted.end(), m) != wanted.end();
    });
    if (named) notes += "- " + e.note + "\n";
  }
  return notes;
}

}  // namespace kagent::agent
