// kagent ref OP: the operator as a candidate sees it (tensor names, shapes, dtypes, scalars, the
// random numbers forward draws, which candidates get as inputs, with what they are) and
// its eager and torch.compile times, and what cuBLAS and cuDNN take for its own GEMMs and
// convolutions. PyTorch references go through the reference server
// (baselines cached on disk; --refresh re-measures); native references list op.json's tensors
// and time the reference plan in kagent-runner.
#include <memory>
#include <random>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include "commands.hpp"
#include "help_format.hpp"
#include "kagent/common/error.hpp"
#include "kagent/common/text_table.hpp"
#include "kagent/eval/baselines_file.hpp"
#include "kagent/eval/evaluator.hpp"
#include "kagent/protocol/protocol.hpp"
#include "kagent/protocol/reference_quality.hpp"
#include "kagent/reference/ref_server.hpp"

namespace kagent::cli {

namespace {

struct RefArgs {
  std::string op;
  std::string precision;
  int gpu = 0;
  bool refresh = false;
  bool json = false;
  std::string export_baselines;  // --export-baselines FILE
};

std::string shape_text(const std::vector<int64_t>& shape) {
  return fmt::format("{}", fmt::join(shape, " x "));
}

std::string time_text(const std::optional<TimingSummary>& t) {
  if (!t) return "n/a";
  return fmt::format("{:.4f} ms median (n={}, p10 {:.4f}, p90 {:.4f}, {})", t->median_ms, t->n, t->p10_ms, t->p90_ms,
                     t->stop_reason);
}

nlohmann::json tensors_json(const std::vector<TensorSpec>& ts) {
  nlohmann::json a = nlohmann::json::array();
  for (const auto& t : ts) {
    nlohmann::json j = {{"name", t.name}, {"shape", t.shape}, {"dtype", dtype_name(t.dtype)}};
    if (!t.drawn.empty()) j["meaning"] = t.drawn;
    if (t.unread) j["unread"] = true;
    a.push_back(std::move(j));
  }
  return a;
}

void add_rows(TextTable& t, const std::vector<TensorSpec>& ts, const char* role) {
  for (const auto& s : ts)
    t.add_row({s.name, s.unread ? std::string(role) + " (unread)" : std::string(role), shape_text(s.shape),
               std::string(dtype_name(s.dtype))});
}

// Per output of the reference: its share of exact zeros, and why it is a weak reference (if it is)
// at this tolerance.
nlohmann::json output_quality(const RefSignature& sig, const Tolerance& tol) {
  nlohmann::json a = nlohmann::json::array();
  for (size_t i = 0; i < sig.output_stats.size() && i < sig.outputs.size(); ++i) {
    const RefOutputStats& s = sig.output_stats[i];
    std::optional<std::string> weak;
    if (s.min && s.max && s.min_abs) weak = weak_reference(s.numel, s.zeros, *s.min, *s.max, *s.min_abs, tol);
    a.push_back({{"name", sig.outputs[i].name},
                 {"zero_share", s.zero_share},
                 {"weak", weak ? nlohmann::json(*weak) : nlohmann::json()}});
  }
  return a;
}

// Adds the problem's baselines (measured under the default stop rule) to a shared file, keyed by
// what makes them valid (eval/baselines_file.hpp); said on stderr, stdout stays the report.
void export_baselines(const std::string& file, const Op& op, Precision precision, const RefSignature& sig,
                      const RefBaselines& b) {
  BaselineEntry e;
  e.key = {sig.source_hash,       std::string(precision_name(precision)), b.allow_tf32, sig.gpu_name, sig.torch_version,
           sig.baselines_protocol};
  e.problem = op.reference.filename().string();
  e.eager = b.eager;
  e.compile = b.compile;
  e.compile_error = b.compile_error;
  e.cache_key = b.key;
  BaselinesFile::add(file, e);
  fmt::print(stderr, "baselines of {} ({}, TF32 {}, {}, torch {}) {} to {}\n", e.problem, e.key.precision,
             e.key.allow_tf32 ? "on" : "off", e.key.gpu_name, e.key.torch, b.cached ? "from the cache added" : "added",
             file);
}

int run_python(const Op& op, const RefArgs& a) {
  Precision precision = a.precision.empty() ? op.precision : precision_option(a.precision);
  RefServer server(a.gpu, op.reference);
  RefSignature sig = server.load(op, precision, std::random_device{}());
  RefBaselines b = server.baselines(a.refresh, StopRule{});
  // What cuBLAS and cuDNN take for the reference's own GEMMs and convolutions (cached as the
  // baselines are): guidance, so a failure is said and the rest still printed.
  RefLibraryTimes lib;
  try {
    lib = server.library_times(a.refresh);
    // And kagent's own gemm and conv steps for the same calls, timed by the runner.
    EvalOptions opt;
    opt.gpu = a.gpu;
    opt.refresh_baselines = a.refresh;
    Evaluator ev(opt, std::make_shared<CompileCache>(CompileCache::default_dir()));
    ev.time_library_steps(lib, sig.allow_tf32);
  } catch (const Error& e) {
    if (lib.calls.empty())
      lib.note = fmt::format("not timed: {}", e.what());
    else
      spdlog::warn("kagent's library steps were not timed: {}", e.what());
  }
  if (!a.export_baselines.empty()) export_baselines(a.export_baselines, op, precision, sig, b);
  const Tolerance tol = with_precision(op, precision).tolerance;
  const nlohmann::json quality = output_quality(sig, tol);
  if (a.json) {
    nlohmann::json scalars = nlohmann::json::array();
    for (const auto& s : sig.scalars) scalars.push_back({{"name", s.name}, {"value", s.value}, {"type", s.type}});
    print_json({{"op", op.name},
                {"reference", op.reference.string()},
                {"precision", precision_name(precision)},
                {"gpu", sig.gpu_name},
                {"torch", sig.torch_version},
                {"inputs", tensors_json(sig.inputs)},
                {"draws", tensors_json(sig.draws)},
                {"scalars", scalars},
                {"params", tensors_json(sig.params)},
                {"outputs", tensors_json(sig.outputs)},
                {"degenerate", sig.degenerate ? nlohmann::json(*sig.degenerate) : nlohmann::json()},
                {"outputs_quality", quality},
                {"allow_tf32", sig.allow_tf32},
                {"tolerance", tol},
                {"eager", b.eager},
                {"compile", b.compile ? nlohmann::json(*b.compile) : nlohmann::json()},
                {"compile_error", b.compile_error},
                {"baselines_cached", b.cached},
                {"library_calls", lib},
                {"baselines_exported_to", a.export_baselines}});
    return 0;
  }
  fmt::print("{} (PyTorch reference {}), {}, {} with torch {}\n\n", op.name, op.reference.string(),
             precision_name(precision), sig.gpu_name, sig.torch_version);
  TextTable t({"tensor", "role", "shape", "dtype"});
  add_rows(t, sig.inputs, "input");
  add_rows(t, sig.draws, "drawn input");
  add_rows(t, sig.params, "param");
  add_rows(t, sig.outputs, "output");
  fmt::print("{}", t.render());
  for (const auto& s : sig.scalars) fmt::print("scalar {} = {} ({})\n", s.name, s.value.dump(), s.type);
  // Random numbers forward draws itself: a candidate gets each trial's as inputs.
  for (const auto& d : sig.draws) fmt::print("drawn input {}: {}\n", d.name, d.drawn);
  if (sig.degenerate) fmt::print("flag: degenerate reference: {}\n", *sig.degenerate);
  for (const auto& q : quality) {
    fmt::print("output {}: {:.1f}% exact zeros\n", q["name"].get<std::string>(), 100 * q["zero_share"].get<double>());
    if (q["weak"].is_string())
      fmt::print("flag: weak reference: output '{}' {}\n", q["name"].get<std::string>(), q["weak"].get<std::string>());
  }
  fmt::print("{}\nnumerics: TF32 {} for the reference and the baselines\n", precision_rule(precision, tol),
             sig.allow_tf32 ? "on" : "off");
  fmt::print("\neager:         {}\n", time_text(b.eager));
  fmt::print("torch.compile: {}{}\n", time_text(b.compile),
             b.compile_error.empty() ? "" : "  (" + b.compile_error + ")");
  fmt::print("baselines: {}\n", b.cached ? "from the cache (--refresh re-measures)" : "measured now and cached");
  if (const std::string text = library_times_text(lib, b.eager.median_ms, lib.calls.size()); !text.empty())
    fmt::print("\n{}", text);
  else if (!lib.note.empty())
    fmt::print("\nlibrary calls: {}\n", lib.note);
  return 0;
}

int run_native(const Op& op, const RefArgs& a) {
  EvalOptions opt;
  opt.gpu = a.gpu;
  Evaluator ev(opt, std::make_shared<CompileCache>(CompileCache::default_dir()));
  // The reference evaluated as a candidate against itself: its timing is the eager baseline.
  EvalReport r = ev.evaluate(op, load_candidate(op.reference));
  std::optional<TimingSummary> eager = r.outcome.reference_time;
  std::optional<TimingSummary> compile;
  if (a.json) {
    print_json({{"op", op.name},
                {"reference", op.reference.string()},
                {"inputs", tensors_json(op.inputs)},
                {"outputs", tensors_json(op.outputs)},
                {"eager", eager ? nlohmann::json(*eager) : nlohmann::json()},
                {"compile_ms", op.compile_baseline_ms ? nlohmann::json(*op.compile_baseline_ms) : nlohmann::json()}});
    return 0;
  }
  fmt::print("{} (native reference {}), {}\n\n", op.name, op.reference.string(), r.outcome.device.name);
  TextTable t({"tensor", "role", "shape", "dtype"});
  add_rows(t, op.inputs, "input");
  add_rows(t, op.outputs, "output");
  fmt::print("{}", t.render());
  for (const auto& f : r.outcome.flags) fmt::print("flag: {}\n", flag_text(f));
  fmt::print("\neager (reference plan): {}\n", time_text(eager));
  fmt::print("torch.compile:          {}\n",
             op.compile_baseline_ms ? fmt::format("{:.4f} ms (compile_baseline_ms in op.json)", *op.compile_baseline_ms)
                                    : std::string("n/a (no compile_baseline_ms in op.json)"));
  return 0;
}

}  // namespace

Command add_ref_command(CLI::App& app) {
  auto args = std::make_shared<RefArgs>();
  CLI::App* sub = app.add_subcommand("ref", "Show an operator's signature and its eager and torch.compile times");
  set_examples(sub,
               {
                   {"kagent ref level1/19",
                    "the tensors a candidate sees, their shapes and dtypes, and the eager and torch.compile times"},
                   {"kagent ref level2/62 --export-baselines baselines.json",
                    "adds the measured baselines to a file every node of a cluster scores against"},
               });
  sub->add_option("op", args->op, "op.json or KernelBench .py")->required()->check(CLI::ExistingFile);
  sub->add_option("--precision", args->precision, "fp32, tf32, fp16 or bf16 (default: the op's)");
  sub->add_option("--gpu", args->gpu, "GPU index")->check(CLI::NonNegativeNumber);
  sub->add_flag("--refresh", args->refresh, "Re-measure the baselines instead of reading the cache");
  sub->add_flag("--json", args->json, "Print JSON");
  sub->add_option("--export-baselines", args->export_baselines,
                  "Also add the eager and torch.compile times to this shared baselines file (made if missing; an "
                  "entry of the same problem, precision, GPU model and torch version is replaced) for `kagent "
                  "eval|bench|serve --baselines`");
  return {sub, [args]() {
            Op op = load_op(args->op);
            if (!args->export_baselines.empty() && op.ref_kind != RefKind::python)
              throw InputError(
                  fmt::format("--export-baselines: {} is a native reference; its baselines are the "
                              "reference plan's time, measured with each evaluation",
                              args->op));
            return op.ref_kind == RefKind::python ? run_python(op, *args) : run_native(op, *args);
          }};
}

}  // namespace kagent::cli
