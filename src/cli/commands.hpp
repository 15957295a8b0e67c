#pragma once
// Each subcommand registers itself on the app and returns the function that runs it once CLI11
// has parsed the command line. The function returns the process exit code (ExitCode) or throws
// kagent::Error, which main() turns into a message and that error's code.
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "kagent/compile/default_arch.hpp"
#include "kagent/eval/evaluator.hpp"
#include "kagent/gpu/devices.hpp"
#include "kagent/judge/prebuild.hpp"
#include "kagent/llm/config.hpp"
#include "kagent/spec/op.hpp"
#include "kagent/spec/op_overrides.hpp"
#include "kagent/spec/precision_option.hpp"

namespace kagent::cli {

struct Command {
  CLI::App* app = nullptr;
  std::function<int()> run;
};

Command add_compile_command(CLI::App& app);
Command add_eval_command(CLI::App& app);
Command add_doctor_command(CLI::App& app);
Command add_ref_command(CLI::App& app);
Command add_optimize_command(CLI::App& app);
Command add_report_command(CLI::App& app);
Command add_bench_command(CLI::App& app);
Command add_check_command(CLI::App& app);
Command add_profile_command(CLI::App& app);
Command add_serve_command(CLI::App& app);

// Shared output helpers.
void print_json(const nlohmann::json& j);
// The architecture to compile for: --arch if given, else GPU `gpu`'s when there is one, else
// sm_90a (compile/default_arch.hpp: the optimize run needs it too).
using kagent::default_arch;
// Writes an output file a flag asked for (--html, --junit): its folder is made if missing, the file
// replaced atomically, and where it went is said on stderr (stdout stays the command's own output).
void write_output_file(const std::string& path, const std::string& contents, const char* what);
// --atol, --rtol and --tolerance (exclusive with the other two), written into *o when given.
void add_op_flags(CLI::App* sub, OpOverrides* o);
// What --op takes: an op.json or KernelBench .py, a folder holding op.json, or a KernelBench id
// (level1/19) resolved under $KAGENT_KERNELBENCH_DIR (the value becomes the file's path).
CLI::Validator op_path();
// The stopping rule and the measurement knobs a command's flags set (measure_flags.cpp).
struct MeasureFlags {
  std::string preset = "default";  // --preset: the values stop_rule and knobs start from
  StopRule stop_rule;
  MeasureKnobs knobs;
  // --torch-ops (or --allow-torch-ops, or the preset's); nullopt: cap, the CLI's default.
  std::optional<TorchOps> torch_ops;
  TorchOps torch_ops_or_default() const { return torch_ops.value_or(TorchOps::cap); }
  // --baselines FILE|DIR, read when parsed: PyTorch baselines shared across machines.
  std::shared_ptr<const BaselinesFile> baselines;
  void validate() const;             // InputError for contradictory bounds (max below min)
  void apply(EvalOptions& o) const;  // validates, then sets o.stop_rule, o.knobs, o.torch_ops and o.baselines
};
void add_measure_flags(CLI::App* sub, MeasureFlags* m);
// --provider, --base-url, --model, --api-key-env, and (not for doctor, which checks an endpoint)
// --allow-op-endpoint, --script, --tool-choice, written into *f; the help says whose they are.
enum class LlmFlagsFor { optimize, bench, doctor };
void add_llm_flags(CLI::App* sub, llm::LlmFlags* f, LlmFlagsFor who);
// --precision fp32|tf32|fp16|bf16; InputError naming the flag otherwise (spec/precision_option.hpp).
using kagent::precision_option;
// --gpus "0,1,3": indices checked against the machine's GPUs (when the driver answered), no repeats.
std::vector<int> parse_gpus(const std::string& text, const GpuInventory& inv);
// --build-jobs N of eval, bench --samples and serve: N threads building ahead (-1: the default
// for `gpu_workers` workers; 0: none, nullptr) for --arch, else GPU `gpu`'s target.
std::shared_ptr<judge::Prebuilder> make_prebuilder(int build_jobs, const std::string& arch, int gpu, int gpu_workers,
                                                   std::shared_ptr<CompileCache> cache);

}  // namespace kagent::cli
