#include "kagent/agent/task_text.hpp"

#include <algorithm>
#include <type_traits>

#include <fmt/format.h>

#include "kagent/agent/module_init.hpp"
#include "kagent/common/files.hpp"
#include "kagent/common/text_table.hpp"
#include "kagent/compile/options.hpp"
#include "kagent/gpu/devices.hpp"
#include "kagent/profile/compute_floor.hpp"

namespace kagent::agent {

namespace {

std::string shape_text(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += fmt::format("{}{}", i ? ", " : "", shape[i]);
  return s + "]";
}

// Every input forward reads, read once, and every output written once: an input or parameter it
// never reads (TensorSpec::unread) no kernel need touch.
int64_t operator_bytes(const Op& op) {
  int64_t n = 0;
  for (const auto& t : op.inputs)
    if (!t.unread) n += t.bytes();
  for (const auto& t : op.outputs) n += t.bytes();
  return n;
}

std::string signature_text(const Op& op) {
  if (!op.signature_known())
    return "(not available on this machine: the reference server needs a GPU and torch. Names follow the rules below: "
           "forward's parameters, state_dict entries with '.' -> '_', outputs out / out0, out1, ...)";
  TextTable t({"tensor", "role", "shape", "dtype"});
  bool zero_d_output = false, zero_d = false;
  std::string drawn;
  bool unread = false;
  for (const auto& in : op.inputs) {
    t.add_row({in.name,
               !in.drawn.empty() ? "input (drawn)"
               : in.unread       ? "input (unread)"
                                 : "input",
               shape_text(in.shape), std::string(dtype_name(in.dtype))});
    unread = unread || in.unread;
    zero_d = zero_d || in.shape.empty();
    if (!in.drawn.empty()) drawn += fmt::format("{}: {}\n", in.name, in.drawn);
  }
  for (const auto& o : op.outputs) {
    t.add_row({o.name, "output", shape_text(o.shape), std::string(dtype_name(o.dtype))});
    zero_d_output = zero_d_output || o.shape.empty();
  }
  std::string s = t.render();
  if (unread)
    s += "Inputs marked (unread) are ones the reference's forward never reads (a layer it never calls, an argument "
         "it ignores): they are passed, but no kernel needs them, and the memory floor below does not count them.\n";
  // Random numbers the reference draws inside forward: the candidate gets each trial's as inputs.
  if (!drawn.empty())
    s += "Inputs marked (drawn) are random numbers the reference draws inside forward, fresh each trial; use them "
         "as given (draw nothing yourself):\n" +
         drawn;
  for (const auto& sc : op.scalars)
    s += fmt::format("scalar {} = {} ({})\n", sc.name,
                     sc.value.is_int ? fmt::format("{}", sc.value.i) : fmt::format("{}", sc.value.f),
                     sc.value.is_int ? "integer: pass it as i32:/i64:" : "float: pass it as f32:/f64:");
  // Said only where it applies: most operators have no 0-d tensor.
  if (zero_d || zero_d_output) s += "Shape [] is a 0-d tensor: one element at index 0 (numel 1, no .shape[i]).";
  if (zero_d_output)
    s += " Write a 0-d output exactly once (e.g. thread 0 of block 0 stores the final value). To accumulate into it "
         "with atomics, set it to 0 in an earlier launch of your plan first: it holds NaN (0xFF bytes) when a run "
         "starts.";
  while (!s.empty() && s.back() == '\n') s.pop_back();  // the template spaces the sections
  return s;
}

std::string reference_notes(const Op& op, std::string_view source) {
  if (op.ref_kind != RefKind::python) return "";
  const std::string modules = module_init_notes(source);
  return fmt::format(
      R"(
Notes on PyTorch references: tensor names are forward()'s parameter names, the module's state_dict
entries with "." replaced by "_" (conv.weight -> conv_weight), and the outputs "out" (or out0, out1,
... when forward returns a tuple). Constants fixed in __init__ or by get_init_inputs() (dims, eps,
kernel sizes, ...) are not passed: hard-code them in your kernel. forward()'s int/float arguments
can be passed by name in the plan ("f32:s"). The module runs as KernelBench runs it, in training
mode: BatchNorm normalizes with the batch's statistics. Only the outputs are compared: state the
module updates in place (BatchNorm's running_mean/running_var) is neither compared nor needed.
The values your kernel meets: the module is built as written, so its parameters carry PyTorch's
default initialization{}
A tensor made in __init__ by torch.randn or torch.rand holds what was drawn. Every draw is under a
seed kagent picks at random when it loads the reference, never read from a file. The inputs are
get_inputs() as written above (torch.randn: standard normal; torch.rand: uniform in [0, 1)), under
a fresh seed at every trial. With these magnitudes and the reduction lengths of the operator, they
set the rounding error your kernel is measured against.
)",
      modules.empty() ? "." : ", for the layers this reference builds:\n" + modules.substr(0, modules.size() - 1));
}

// Datasheet peaks (dense), so the model can place a kernel against the compute roof. Only parts
// whose figures are these: the PCIe and NVL variants of Hopper have lower ones.
bool hopper_sxm(const std::string& name) {
  const bool hopper = name.find("H100") != std::string::npos || name.find("H200") != std::string::npos ||
                      name.find("H800") != std::string::npos;
  return hopper && name.find("PCIe") == std::string::npos && name.find("NVL") == std::string::npos;
}

std::string datasheet(const std::string& name) {
  if (hopper_sxm(name))
    return " Datasheet peaks (dense): FP32 67 TFLOP/s, TF32 tensor 495 TFLOP/s, BF16/FP16 tensor 989 TFLOP/s, FP8 "
           "1979 TFLOP/s.";
  if (name.find("A100") != std::string::npos)
    return " Datasheet peaks (dense): FP32 19.5 TFLOP/s, TF32 tensor 156 TFLOP/s, BF16/FP16 tensor 312 TFLOP/s.";
  return "";
}

std::string ms(double v) {
  return fmt::format("{:.4f} ms", v);
}

// JSON plan text and kernel signatures for candidate_example.
struct ExampleArg {
  std::string plan;   // "x", "i64:numel(x)"
  std::string param;  // "const float* x", "long long n"
};

std::string plan_args(const std::vector<ExampleArg>& args) {
  std::string s;
  for (const auto& a : args) s += fmt::format("{}\"{}\"", s.empty() ? "" : ", ", a.plan);
  return s;
}

std::string params(const std::vector<ExampleArg>& args) {
  std::string s;
  for (const auto& a : args) s += fmt::format("{}{}", s.empty() ? "" : ", ", a.param);
  return s;
}

}  // namespace

double datasheet_bandwidth_gbs(const std::string& name) {
  if (!hopper_sxm(name)) return 0;
  if (name.find("H200") != std::string::npos) return 4800;
  return 3350;  // H100 / H800 SXM, HBM3
}

std::optional<Tier3Target> tier3_target(const TimingFacts& t) {
  if (!t.compile_ms || !(*t.compile_ms > 0)) return std::nullopt;
  Tier3Target target;
  target.compile_ms = *t.compile_ms;
  target.limit_ms = 0.95 * *t.compile_ms;
  if (t.eager_ms && *t.eager_ms > 0 && *t.eager_ms <= target.limit_ms) {
    target.limit_ms = *t.eager_ms;
    target.eager_binds = true;
  }
  return target;
}

std::string Tier3Target::text() const {
  if (eager_binds)
    return fmt::format(
        "under {}, torch eager's time: torch.compile ({}) is slower than eager here, so beating eager is the line "
        "that binds, not 0.95x torch.compile",
        ms(limit_ms), ms(compile_ms));
  return fmt::format("<= {}, 0.95x torch.compile's {}", ms(limit_ms), ms(compile_ms));
}

namespace {

// The memory floor in ms, 0 when the tensors or the bandwidth are not known.
double memory_floor_ms(const Op& op, const TimingFacts& t) {
  if (!op.signature_known() || op.outputs.empty() || t.bandwidth_gbs <= 0) return 0;
  return static_cast<double>(operator_bytes(op)) / (t.bandwidth_gbs * 1e9) * 1e3;
}

// The faster baseline, as ("torch.compile", ms) or ("torch eager", ms); nullopt without either.
std::optional<std::pair<std::string, double>> fastest_baseline(const TimingFacts& t) {
  std::optional<std::pair<std::string, double>> best;
  if (t.eager_ms && *t.eager_ms > 0) best = {"torch eager", *t.eager_ms};
  if (t.compile_ms && *t.compile_ms > 0 && (!best || *t.compile_ms < best->second))
    best = {"torch.compile", *t.compile_ms};
  return best;
}

// The baselines against a floor: "torch eager takes 1.30x that, torch.compile 1.04x".
std::string baselines_against(const TimingFacts& t, double floor, const std::string& that) {
  std::string against;
  if (t.eager_ms) against = fmt::format("torch eager takes {:.2f}x {}", *t.eager_ms / floor, that);
  if (t.compile_ms)
    against +=
        fmt::format("{}torch.compile {:.2f}x", against.empty() ? "torch.compile takes " : ", ", *t.compile_ms / floor);
  return against;
}

}  // namespace

std::string memory_floor_text(const Op& op, const TimingFacts& t) {
  if (!op.signature_known() || op.outputs.empty()) return "";
  const int64_t bytes = operator_bytes(op);
  const std::string what = fmt::format(
      "the operator's {} bytes ({:.1f} MB: every input forward reads, read once, every output "
      "written once)",
      bytes, static_cast<double>(bytes) / 1e6);
  if (t.bandwidth_gbs <= 0)
    return fmt::format("Memory floor: {}; no bandwidth is known here to turn them into a time.\n", what);
  const double floor = static_cast<double>(bytes) / (t.bandwidth_gbs * 1e9) * 1e3;
  // The floor at the theoretical bandwidth: the bound no kernel passes, where a measured bandwidth is
  // what kagent's own copy reached. Unknown: no claim that a time is out of reach.
  const bool bound_known = t.theoretical_gbs > 0;
  const double hard =
      bound_known ? static_cast<double>(bytes) / (std::max(t.theoretical_gbs, t.bandwidth_gbs) * 1e9) * 1e3 : 0;
  std::string s =
      fmt::format("Memory floor: {}, {} at {:.0f} GB/s, {}.", ms(floor), what, t.bandwidth_gbs, t.bandwidth_source);
  if (const std::string against = baselines_against(t, floor, "that"); !against.empty()) s += " " + against + ".";
  // A baseline at or under the floor moves these bytes faster than the measurement did: the floor
  // is no bound for this operator, only the theoretical one is.
  const auto fastest = fastest_baseline(t);
  const bool beaten = fastest && fastest->second <= floor;
  // Under even the theoretical floor: the operator moves fewer bytes than every input and output
  // once (an input forward never reads), and no floor here bounds it.
  const bool beaten_hard = beaten && bound_known && fastest->second <= hard;
  if (beaten_hard)
    s += fmt::format(
        " {} takes {:.2f}x even the floor at the theoretical {:.0f} GB/s ({}): it moves fewer bytes than these (an "
        "input it never reads, or reads only in part), so no floor here bounds this operator.",
        fastest->first, fastest->second / hard, t.theoretical_gbs, ms(hard));
  else if (beaten)
    s += fmt::format(
        " {} already moves these bytes at {:.0f} GB/s, faster than that, so this floor is no bound here{}.",
        fastest->first, static_cast<double>(bytes) / (fastest->second * 1e-3) / 1e9,
        bound_known && hard < floor
            ? fmt::format("; the floor at the theoretical {:.0f} GB/s ({}) is one", t.theoretical_gbs, ms(hard))
            : std::string());
  if (const auto target = tier3_target(t)) {
    const double ratio = target->limit_ms / floor;
    s += fmt::format(" Tier 3 ({}) is {:.2f}x the floor",
                     target->eager_binds ? "under " + ms(target->limit_ms) : "<= " + ms(target->limit_ms), ratio);
    if (bound_known && target->limit_ms < hard && !beaten_hard)
      s += fmt::format(
          ": below {}, faster than the memory can move these bytes, so tier 3 is out of reach; aim for tier 2 "
          "and the lowest time you can get.",
          hard < floor ? fmt::format("even the floor at the theoretical {:.0f} GB/s ({})", t.theoretical_gbs, ms(hard))
                       : std::string("it"));
    else if (beaten_hard)
      s += ".";
    else if (ratio < 1)
      s += fmt::format(": below it, so tier 3 takes a kernel that moves these bytes faster than that bandwidth{}{}.",
                       beaten ? fmt::format(", as {} does", fastest->first) : std::string(),
                       bound_known && hard < floor
                           ? fmt::format(" (the theoretical {:.0f} GB/s allows {}, {:.2f}x tier 3's time)",
                                         t.theoretical_gbs, ms(hard), hard / target->limit_ms)
                           : std::string());
    else if (ratio < 1.05)
      s += ": within 5% of it, so tier 3 takes a kernel that moves these bytes at nearly copy speed, with nothing to "
           "spare.";
    else
      s += ".";
  }
  return s + "\n";
}

std::string compute_floor_text(const Op& op, const TimingFacts& t) {
  if (!op.signature_known() || op.outputs.empty()) return "";
  if (!op.flops)
    return fmt::format(
        "Compute floor: no FLOP count here ({}). Work the FLOPs out from the reference and divide them by the "
        "rates in the GPU section below.\n",
        op.flops_source.empty() ? "none is known for this operator" : op.flops_source);
  std::string s = fmt::format("Compute floor: the operator's {} ({:.4g} FLOPs, {})", profile::flops_text(*op.flops),
                              *op.flops, op.flops_source.empty() ? std::string("counted by kagent") : op.flops_source);
  if (!t.peaks) return s + "; no measured compute rate is known here to turn them into a time.\n";
  const profile::ComputeFloor f = profile::compute_floor(*op.flops, *t.peaks, op.precision);
  if (f.roofs.empty()) return s + "; no compute rate was measured on this GPU to turn them into a time.\n";
  const char* allows = op.precision == Precision::fp32   ? "fp32 accuracy allows (no plain TF32)"
                       : op.precision == Precision::tf32 ? "tf32 allows"
                                                         : "this precision allows";
  s += fmt::format(", at the rates {}, each measured on this GPU:", allows);
  for (size_t i = 0; i < f.roofs.size(); ++i) {
    const profile::ComputeRoof& r = f.roofs[i];
    s += fmt::format("{} {} at {:.1f} TFLOP/s ({}) {}", i ? ";" : "", r.name, r.gflops / 1e3, r.source,
                     ms(*op.flops / (r.gflops * 1e9) * 1e3));
  }
  s += fmt::format(". The compute floor is {} ({}).", ms(f.floor_ms), f.roof.name);
  const double mem = memory_floor_ms(op, t);
  const double ideal = std::max(mem, f.floor_ms);
  if (mem > 0)
    s += f.floor_ms > mem
             ? fmt::format(
                   " It is {:.2f}x the memory floor: the operator is compute-bound, and the compute floor is "
                   "its ideal time.",
                   f.floor_ms / mem)
             : fmt::format(
                   " It is {:.2f}x the memory floor: the operator is memory-bound, and the memory floor is "
                   "its ideal time.",
                   f.floor_ms / mem);
  if (f.floor_ms >= mem) {
    if (const std::string against = baselines_against(t, ideal, "the compute floor"); !against.empty())
      s += " " + against + ".";
    // The count is PyTorch's for the reference's algorithm: a baseline under the floor does less
    // work (Winograd, FFT) or runs faster than these rates, and the floor is no bound for it.
    const auto fastest = fastest_baseline(t);
    const bool beaten = fastest && fastest->second <= ideal;
    if (beaten)
      s += fmt::format(
          " {} is already at or under it: it does fewer FLOPs than this count (a Winograd or FFT algorithm) or runs "
          "faster than these rates, so the floor is no bound here.",
          fastest->first);
    if (const auto target = tier3_target(t)) {
      const double ratio = target->limit_ms / ideal;
      s += fmt::format(" Tier 3 ({}) is {:.2f}x the compute floor",
                       target->eager_binds ? "under " + ms(target->limit_ms) : "<= " + ms(target->limit_ms), ratio);
      if (ratio >= 1 || beaten)
        s += ".";
      else
        s += ": below it, so tier 3 takes fewer FLOPs than this count (a cheaper algorithm, work the output does not "
             "need) or rates above those measured; aim for tier 2 first.";
    }
  }
  return s + "\n";
}

std::string budget_plan_text(const AgentOptions& budget) {
  if (budget.max_turns == 1)
    return "With one turn your first reply is the whole run: its tool calls run in order, but no result comes back "
           "to you before the run ends, so there is nothing to iterate on and the first candidate is the answer. "
           "In that one reply write the candidate, compile it, evaluate it and call finish with its path. Write the "
           "kernel you are surest is correct, and as fast as that certainty allows; the advice to iterate, profile "
           "and re-evaluate does not apply to this run.";
  return "Plan for a correct candidate within the first few evaluations, then optimization.";
}

std::string baselines_text(const Op& op, const TimingFacts& t) {
  std::string s;
  const auto target = tier3_target(t);
  const std::string tier3 = target ? fmt::format(" (tier 3: {})", target->text()) : "";
  if (!t.not_measured.empty()) {
    s = fmt::format("not measured ({})", t.not_measured);
  } else if (t.native_reference) {
    s = fmt::format(
        "the native reference is timed at your first evaluation (its time is the eager baseline, and tier 3 also "
        "needs a time under it); torch.compile {}",
        t.compile_ms ? fmt::format("{}{}", ms(*t.compile_ms), tier3)
                     : std::string("not given: tier 3 is out of reach"));
  } else {
    s = fmt::format("torch eager {}; torch.compile {}", t.eager_ms ? ms(*t.eager_ms) : std::string("unavailable"),
                    t.compile_ms ? fmt::format("{}{}", ms(*t.compile_ms), tier3)
                                 : fmt::format("unavailable ({}): tier 3 is out of reach", t.compile_missing));
  }
  s += "\n";
  std::string floor = memory_floor_text(op, t) + compute_floor_text(op, t);
  if (t.library_times) {
    const std::string library = library_times_text(*t.library_times, t.eager_ms);
    if (!library.empty()) floor += (floor.empty() ? "" : "\n") + library;
  }
  return floor.empty() ? s : fmt::format("{}\n{}", s, floor);
}

std::string candidate_example(const Op& op) {
  const TensorSpec* in = op.inputs.empty() ? nullptr : &op.inputs.front();
  const TensorSpec* out = op.outputs.empty() ? nullptr : &op.outputs.front();
  const std::string in_name = in ? in->name : "x", out_name = out ? out->name : "out";
  const std::string in_type(in ? dtype_c_type(in->dtype) : "float"), out_type(out ? dtype_c_type(out->dtype) : "float");
  // The scratch buffer's name must not be one of the operator's.
  std::string partial = "partial";
  const auto names = op.tensor_names(), scalars = op.scalar_names();
  while (std::find(names.begin(), names.end(), partial) != names.end() ||
         std::find(scalars.begin(), scalars.end(), partial) != scalars.end())
    partial += "_";

  const std::string blocks_in = fmt::format("cdiv(numel({}), 1024)", in_name);
  std::vector<ExampleArg> first = {{in_name, fmt::format("const {}* {}", in_type, in_name)},
                                   {partial, fmt::format("float* {}", partial)},
                                   {fmt::format("i64:numel({})", in_name), "long long n"}};
  std::vector<ExampleArg> second = {{in_name, fmt::format("const {}* {}", in_type, in_name)},
                                    {partial, fmt::format("const float* {}", partial)},
                                    {out_name, fmt::format("{}* {}", out_type, out_name)},
                                    {fmt::format("i64:numel({})", out_name), "long long n"}};
  if (!op.scalars.empty()) {
    const ScalarArg& sc = op.scalars.front();
    second.push_back(sc.value.is_int ? ExampleArg{fmt::format("i64:{}", sc.name), fmt::format("long long {}", sc.name)}
                                     : ExampleArg{fmt::format("f32:{}", sc.name), fmt::format("float {}", sc.name)});
  }
  std::string s = fmt::format(
      R"EX(/*kagent
{{
  "scratch": {{"{0}": {{"dtype": "f32", "shape": ["{1}"]}}}},
  "launch": [
    {{"kernel": "first_pass", "grid": ["{1}"], "block": [256],
     "args": [{2}]}},
    {{"kernel": "second_pass", "grid": ["cdiv(numel({3}), 256)"], "block": [256], "smem": 1024,
     "args": [{4}]}}
  ]
}}
*/
extern "C" __global__ void first_pass({5}) {{ ... }}
extern "C" __global__ void second_pass({6}) {{ ... }}
)EX",
      partial, blocks_in, plan_args(first), out_name, plan_args(second), params(first), params(second));
  if (!op.signature_known())
    s += fmt::format("({} and {} stand for the operator's tensor names, which this machine cannot list.)\n", in_name,
                     out_name);
  return s;
}

std::string tools_text(const model_tools::ToolSet& tools, const std::string& shell_note) {
  std::string out;
  for (const auto& t : tools) {
    const auto spec = t->spec();
    // The arguments from the schema the endpoint gets: the required ones in their order, then the
    // optional ones (the properties object is sorted by name) marked "?".
    std::vector<std::string> args;
    const auto& p = spec.parameters;
    if (p.is_object() && p.contains("required") && p["required"].is_array())
      for (const auto& r : p["required"]) args.push_back(r.get<std::string>());
    if (p.is_object() && p.contains("properties") && p["properties"].is_object())
      for (const auto& [name, _] : p["properties"].items())
        if (std::find(args.begin(), args.end(), name) == args.end()) args.push_back(name + "?");
    std::string arg_list;
    for (const auto& a : args) arg_list += fmt::format("{}{}", arg_list.empty() ? "" : ", ", a);
    // The first sentence; a description of one sentence (no ". " inside) is given whole.
    const size_t end = spec.description.find(". ");
    const std::string first = end == std::string::npos ? spec.description : spec.description.substr(0, end + 1);
    out += fmt::format("- {}({}): {}\n", spec.name, arg_list, first);
  }
  if (!shell_note.empty()) out += fmt::format("- ({})\n", shell_note);
  return out;
}

std::string budget_text(const AgentOptions& budget) {
  auto counted = [](auto n, const char* what) {
    const std::string num = std::is_integral_v<decltype(n)> ? fmt::format("{}", n) : fmt::format("{:g}", double(n));
    return fmt::format("{} {}{}", num, what, n == 1 ? "" : "s");
  };
  std::string s = fmt::format("{}, {}", counted(budget.max_turns, "turn"), counted(budget.max_minutes, "minute"));
  if (budget.max_tokens > 0) s += fmt::format(", {}", counted(budget.max_tokens, "token"));
  return s;
}

std::map<std::string, std::string> skill_values() {
  std::string headers, dtypes;
  for (const auto& h : candidate_headers()) headers += fmt::format("{}`<{}>`", headers.empty() ? "" : ", ", h);
  for (DType d : all_dtypes())
    dtypes += fmt::format("{}`{}` {}", dtypes.empty() ? "" : ", ", dtype_name(d), dtype_c_type(d));
  return {{"headers", headers}, {"dtypes", dtypes}, {"scratch_dtypes", std::string(dtype_choices())}};
}

std::string reference_error_text(const TimingFacts& t, Precision p, const Tolerance& tol) {
  if (!t.reference_precision) return "";
  std::string figures, amplified;
  for (const OutputPrecision& o : t.reference_precision->outputs) {
    if (!o.own) continue;
    const ReferenceError& e = *o.own;
    figures += fmt::format("{}`{}` relative L2 {:.2g}, largest element error {:.2g}", figures.empty() ? "" : "; ",
                           o.tensor, e.rel_l2, e.max_abs);
    // Passing with atol = rtol = t; against the op's own pair the smaller of the two decides.
    if (e.tolerance_needed > std::min(tol.atol, tol.rtol))
      amplified +=
          fmt::format("{}`{}` (it would need {:.2g})", amplified.empty() ? "" : ", ", o.tensor, e.tolerance_needed);
  }
  if (figures.empty()) return "";
  std::string s =
      fmt::format("\n\nThe reference's own error against its float64 result, on one input set: {}.", figures);
  if (!amplified.empty())
    s += fmt::format(
        " On {} the reference itself is outside the tolerance of the float64 result: at {} this operator is "
        "ill-conditioned, its rounding amplified (as by sums of exponentials or long cumulative sums). An element "
        "passes within the tolerance of either result or no farther from float64 than the reference, so {} sums "
        "taken in another order can fail where the reference's own rounding passes: where the error grows, "
        "accumulate in float64 (its rates are under The GPU).",
        amplified, precision_name(p), precision_name(p));
  return s;
}

std::string gpu_text(int index) {
  GpuInventory inv = query_gpus();
  if (index >= static_cast<int>(inv.gpus.size()))
    return fmt::format("no GPU on this machine ({}): compile works, evaluate and profile timing do not", inv.problem);
  const GpuInfo& g = inv.gpus[static_cast<size_t>(index)];
  return fmt::format("{} (sm_{}{}), {} SMs, {} MiB L2, {:.0f} GiB memory.", g.name, g.cc_major, g.cc_minor, g.sm_count,
                     g.l2_bytes >> 20, static_cast<double>(g.memory_bytes) / (1024.0 * 1024 * 1024)) +
         datasheet(g.name);
}

std::map<std::string, std::string> task_values(const Op& op, const Op& with_signature, const TimingFacts& timing,
                                               const std::string& gpu, const AgentOptions& budget,
                                               const model_tools::ToolSet& tools, const std::string& shell_note) {
  const std::string source = read_text_file(op.reference);
  std::map<std::string, std::string> v = {
      {"op_name", op.name},
      {"signature", signature_text(with_signature)},
      {"reference_source", source},
      {"reference_notes", reference_notes(op, source)},
      {"baselines", baselines_text(with_signature, timing)},
      {"gpu", timing.peaks ? fmt::format("{}\n{}", gpu, profile::measured_roofs_text(*timing.peaks)) : gpu},
      {"candidate_format", candidate_example(with_signature)},
      // Kept for task templates of earlier versions; the bundled one gives it in {{precision}}.
      {"tolerance", fmt::format("{} ({})", tolerance_text(op.tolerance), precision_name(op.precision))},
      {"precision",
       precision_rule(op.precision, op.tolerance) + reference_error_text(timing, op.precision, op.tolerance)},
      {"budget", budget_text(budget)},
      {"budget_plan", budget_plan_text(budget)},
      {"tools", tools_text(tools, shell_note)},
      {"start", op.start ? fmt::format("{} (copied into your workspace)", op.start->filename().string()) : "none"}};
  v.merge(skill_values());  // system.md and the skills are filled from the same map
  return v;
}

}  // namespace kagent::agent
