#include "task_text.hpp"

#include <type_traits>

#include <fmt/format.h>

#include "kagent/common/files.hpp"
#include "kagent/common/text_table.hpp"
#include "kagent/gpu/devices.hpp"

namespace kagent::cli {

namespace {

std::string shape_text(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

std::string signature_text(const Op& op) {
  if (!op.signature_known())
    return "(not available on this machine: the reference server needs a GPU and torch. Names follow the rules below: "
           "forward's parameters, state_dict entries with '.' -> '_', outputs out / out0, out1, ...)";
  TextTable t({"tensor", "role", "shape", "dtype"});
  const size_t forward = op.inputs.size();
  for (size_t i = 0; i < forward; ++i)
    t.add_row(
        {op.inputs[i].name, "input", shape_text(op.inputs[i].shape), std::string(dtype_name(op.inputs[i].dtype))});
  for (const auto& o : op.outputs) t.add_row({o.name, "output", shape_text(o.shape), std::string(dtype_name(o.dtype))});
  std::string s = t.render();
  for (const auto& sc : op.scalars)
    s += fmt::format("scalar {} = {} ({})\n", sc.name,
                     sc.value.is_int ? std::to_string(sc.value.i) : fmt::format("{}", sc.value.f),
                     sc.value.is_int ? "integer: pass it as i32:/i64:" : "float: pass it as f32:/f64:");
  return s;
}

// Datasheet peaks (dense, SXM parts), so the model can place a kernel against the compute roof;
// the bandwidth kagent measures comes with every evaluation.
std::string datasheet(const std::string& name) {
  if (name.find("H100") != std::string::npos || name.find("H200") != std::string::npos ||
      name.find("H800") != std::string::npos)
    return " Datasheet peaks (dense): FP32 67 TFLOP/s, TF32 tensor 495 TFLOP/s, BF16/FP16 tensor 989 TFLOP/s, FP8 "
           "1979 TFLOP/s.";
  if (name.find("A100") != std::string::npos)
    return " Datasheet peaks (dense): FP32 19.5 TFLOP/s, TF32 tensor 156 TFLOP/s, BF16/FP16 tensor 312 TFLOP/s.";
  return "";
}

std::string gpu_text(int index) {
  GpuInventory inv = query_gpus();
  if (index >= static_cast<int>(inv.gpus.size()))
    return fmt::format("no GPU on this machine ({}): compile works, evaluate and profile timing do not", inv.problem);
  const GpuInfo& g = inv.gpus[static_cast<size_t>(index)];
  return fmt::format(
             "{} (sm_{}{}), {} SMs, {} MiB L2, {:.0f} GiB memory. Peak DRAM bandwidth as kagent measures it is "
             "reported by every evaluation (about 3.35 TB/s on an H100 SXM).",
             g.name, g.cc_major, g.cc_minor, g.sm_count, g.l2_bytes >> 20,
             static_cast<double>(g.memory_bytes) / (1024.0 * 1024 * 1024)) +
         datasheet(g.name);
}

constexpr const char* kCandidateFormat =
    R"FMT(One .cu file of device code only (compiled by NVRTC; no host code, no torch), starting
with a JSON launch plan in a comment that begins with /*kagent and ends with */:

/*kagent
{
  "scratch": {"partial": {"dtype": "f32", "shape": ["x.shape[0]", 64]}},
  "launch": [
    {"kernel": "my_kernel", "grid": ["cdiv(numel(x), 256)"], "block": [256], "smem": 0,
     "args": ["x", "out", "i64:numel(x)"]}
  ],
  "options": ["--use_fast_math"]
}
*/
extern "C" __global__ void my_kernel(const float* x, float* out, long long n) { ... }

- launch: run in order on one stream. grid/block take 1-3 expressions; smem is dynamic shared
  memory in bytes (over 48 KiB is set up for you).
- args: a tensor name passes its device pointer; "type:expression" passes a scalar (i32, i64,
  u32, f32, f64). Expressions: integers, + - * / % ( ), cdiv(a,b), min, max, X.shape[i],
  numel(X), and the operator's scalar arguments by name.
- scratch: buffers that live for one call, filled with garbage (0xFF bytes) before each call.
- The plan is checked against each kernel's parameters (count and sizes) and the operator's
  tensor names. options may add NVRTC flags; -rdc/-dc/-dlto and include paths are refused.
- Headers available: cuda_fp16.h, cuda_bf16.h, mma.h, cooperative_groups, cuda/pipeline.)FMT";

}  // namespace

std::map<std::string, std::string> task_values(const Op& op, const Op& with_signature, const std::string& baselines,
                                               int gpu, const agent::AgentOptions& budget, const tools::ToolSet& tools,
                                               const std::string& shell_note) {
  std::string tool_lines;
  for (const auto& t : tools) {
    auto spec = t->spec();
    // The first sentence; a description of one sentence (no ". " inside) is given whole.
    const size_t end = spec.description.find(". ");
    std::string first = end == std::string::npos ? spec.description : spec.description.substr(0, end + 1);
    tool_lines += fmt::format("- {}: {}\n", spec.name, first);
  }
  if (!shell_note.empty()) tool_lines += "- (" + shell_note + ")\n";
  auto counted = [](auto n, const char* what) {
    const std::string num = std::is_integral_v<decltype(n)> ? fmt::format("{}", n) : fmt::format("{:g}", double(n));
    return fmt::format("{} {}{}", num, what, n == 1 ? "" : "s");
  };
  std::string budget_text =
      counted(budget.max_turns, "turn") + ", " + counted(budget.max_minutes, "minute");  // never "1 turns"
  if (budget.max_tokens > 0) budget_text += ", " + counted(budget.max_tokens, "token");
  return {{"op_name", op.name},
          {"signature", signature_text(with_signature)},
          {"reference_source", read_text_file(op.reference)},
          {"baselines", baselines},
          {"gpu", gpu_text(gpu)},
          {"candidate_format", kCandidateFormat},
          {"tolerance", fmt::format("atol {:g}, rtol {:g} ({}): |out - ref| <= atol + rtol * |ref|, NaN where the "
                                    "reference has NaN",
                                    op.tolerance.atol, op.tolerance.rtol, precision_name(op.precision))},
          {"precision", precision_rule(op.precision, op.tolerance)},
          {"budget", budget_text},
          {"tools", tool_lines},
          {"start", op.start ? op.start->filename().string() + " (copied into your workspace)" : "none"}};
}

}  // namespace kagent::cli
