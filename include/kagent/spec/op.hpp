#pragma once
// The operator: an op.json (v1, docs/candidate.md) or a KernelBench-style .py file used directly.
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "kagent/common/tolerance.hpp"
#include "kagent/spec/dtype.hpp"
#include "kagent/spec/expr.hpp"

namespace kagent {

enum class RefKind { python, cuda };
// The numerics both sides compute in (docs/measurement.md). fp32: IEEE fp32 arithmetic, the reference
// pinned to it (no TF32 tensor cores in PyTorch's matmuls and cuDNN convolutions). tf32: fp32
// tensors, TF32 tensor-core math allowed on both sides, with the tolerance it needs. fp16/bf16:
// the tensors are half precision.
enum class Precision { fp32, tf32, fp16, bf16 };
std::string_view precision_name(Precision p);
// "fp32", "tf32", "fp16" or "bf16"; nullopt for anything else.
std::optional<Precision> parse_precision(std::string_view text);
inline constexpr std::string_view kPrecisionChoices = "fp32, tf32, fp16, bf16";

// How the runner fills an input tensor. Never zeros: zeros hide unwritten outputs.
struct InitSpec {
  enum class Kind { randn, rand, uniform, normal, randint };
  Kind kind = Kind::randn;
  double a = 0.0, b = 1.0;  // uniform(a,b) / normal(mean,std) / randint(lo,hi)
  std::string text;         // as written
};

struct TensorSpec {
  std::string name;
  std::vector<int64_t> shape;
  DType dtype = DType::f32;
  InitSpec init;  // inputs only
  // A PyTorch reference's input that forward draws itself (a dropout's multiplier, torch.randn's
  // h0): what it is, for the tensor table and the task ("drawn by nn.Dropout(p=0.2) in forward,
  // call 1: ..."). Empty for every other tensor. (Initialized, so aggregate initializations that
  // stop at `init` stay complete.)
  std::string drawn{};
  // A PyTorch reference's input or parameter that its forward never reads (a layer it never
  // calls, an argument it ignores): said in the tensor table, and left out of the memory floor.
  bool unread = false;
  int64_t numel() const;
  int64_t bytes() const;
};

// A non-tensor forward argument of a PyTorch reference (an int, float or bool): candidates name
// it in plan expressions ("f32:s").
struct ScalarArg {
  std::string name;
  ExprValue value;
  // From JSON: an integer or a bool (as 0/1) stays an integer, any other number is a float.
  // Throws nlohmann::json::type_error for a value that is not a number or a bool.
  static ScalarArg from_json(std::string name, const nlohmann::json& value);
};

// Whether TF32 tensor-core math is allowed (reference, baselines and candidates).
inline bool allows_tf32(Precision p) {
  return p == Precision::tf32;
}
// One sentence for the task prompt and reports: what the precision means and what it allows.
std::string precision_rule(Precision p, const Tolerance& t);

struct Budget {
  int turns = 40;
  double minutes = 60.0;
  int64_t tokens = 0;  // 0: no token limit
};

struct Op {
  std::string name;
  std::filesystem::path path;  // the op.json, or the .py when used directly
  RefKind ref_kind = RefKind::python;
  std::filesystem::path reference;  // absolute: the .py module or the native reference .cu
  Precision precision = Precision::fp32;
  Tolerance tolerance;           // defaults by precision unless op.json overrides
  bool tolerance_given = false;  // op.json set a tolerance (a --precision override keeps it)
  int correctness_trials = 5;
  Budget budget;
  std::optional<std::filesystem::path> start;  // starting candidate, absolute
  // A native reference declares its tensors; a PyTorch reference's come from the reference
  // server (forward's tensors, then the state_dict's; outputs; scalars), filled in by kagent.
  std::vector<TensorSpec> inputs;
  std::vector<TensorSpec> outputs;
  std::vector<ScalarArg> scalars;
  std::optional<double> compile_baseline_ms;  // native only: makes tier 3 reachable
  // Floating-point operations of one forward call, for the compute floor: a native op.json's
  // "flops", or PyTorch's FlopCounterMode on the reference (filled in with the signature).
  std::optional<double> flops;
  std::string flops_source;  // how they were counted, for the prompt; without flops, why there are none
  nlohmann::json llm;        // the op's "llm" section, validated by src/llm later
  std::string description;

  // Every tensor name a candidate may use (inputs then outputs), and every scalar name.
  std::vector<std::string> tensor_names() const;
  std::vector<std::string> scalar_names() const;
  // Whether the tensors are known: always for a native reference; for a PyTorch reference once
  // the reference server's signature has been filled in.
  bool signature_known() const { return ref_kind == RefKind::cuda || !outputs.empty(); }
};

Tolerance default_tolerance(Precision p);
// The op at another precision (a command's --precision): the tolerance follows the precision's
// default unless op.json gave one.
Op with_precision(Op op, Precision p);

// What an op.json may be, checked before it is parsed: the examples' are under 4 KB, a shared or
// downloaded one of 64 MiB of nested arrays would take gigabytes as a DOM.
inline constexpr size_t kMaxOpJsonBytes = size_t{1} << 20;
inline constexpr size_t kMaxOpJsonValues = size_t{1} << 16;

// Loads an op.json or a .py. Throws InputError naming the file, the key and what was expected.
Op load_op(const std::filesystem::path& path);
// The op.json text of a file at path (paths in it are relative to path's folder); as load_op,
// within kMaxOpJsonBytes and kMaxOpJsonValues.
Op parse_op_json(std::string_view text, const std::filesystem::path& path);

}  // namespace kagent
