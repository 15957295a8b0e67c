#pragma once
// What PyTorch's own initialization gives the parameters of each module type KernelBench builds,
// as torch's reset_parameters does it (torch/nn/modules: linear.py, conv.py, batchnorm.py,
// normalization.py, instancenorm.py, activation.py's MultiheadAttention, rnn.py, transformer.py).
// The values a candidate meets are drawn from these, and their magnitudes set the rounding error it
// is measured against, so the task states them, for the module types the reference names only.
//
// Each entry carries checks that a test runs against torch itself (tests/unit/test_module_init.cpp,
// where torch is installed): an example module built under a fixed seed and what each named
// parameter must be. A note and its checks are written side by side, so a wrong note fails a test.
#include <string>
#include <string_view>
#include <vector>

namespace kagent::agent {

// What one parameter of an example module must hold.
struct ParamCheck {
  enum class Kind { uniform, zeros, ones, absent };
  std::string param;  // the state_dict name ("weight", "self_attn.in_proj_bias")
  Kind kind = Kind::uniform;
  double bound = 0;  // uniform: every |value| <= bound, and the largest above 3/4 of it
};

struct ModuleInit {
  std::vector<std::string> modules;  // the torch.nn class names it covers ("Conv1d", "Conv2d", "Conv3d")
  std::string note;                  // the sentence the task gives
  std::string example;               // a constructor the test builds ("nn.Conv2d(8, 64, 3, groups=2)")
  std::vector<ParamCheck> checks;
};

// Every entry, in the order the notes are given.
const std::vector<ModuleInit>& module_inits();

// The torch.nn class names a reference source constructs ("nn.Conv2d(" or "torch.nn.Conv2d("), each
// once, in order of first appearance.
std::vector<std::string> modules_named(std::string_view source);

// One line per entry that covers a module the source names (a module made of others, such as
// nn.TransformerEncoderLayer, brings its parts' notes too); "" when none.
std::string module_init_notes(std::string_view source);

}  // namespace kagent::agent
