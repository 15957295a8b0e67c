// kagent eval CAND.cu --op OP : the verdict on a candidate: compile, correctness, timing, reward.
// Exit 0 correct, 1 not correct or not compiled, 2 bad input (including an error in a PyTorch
// problem file), 3 environment (no GPU; for a PyTorch reference no python3 or torch).
#include <memory>

#include <fmt/format.h>

#include "commands.hpp"
#include "compile_report.hpp"
#include "kagent/common/error.hpp"
#include "kagent/eval/evaluator.hpp"
#include "kagent/spec/op.hpp"

namespace kagent::cli {

namespace {

struct EvalArgs {
  std::string candidate;
  std::string op;
  std::string arch;
  std::string precision;  // empty: the op's
  int gpu = 0;
  int trials = 0;  // 0: the op's correctness_trials
  double timeout_s = 60;
  bool no_timing = false;
  bool refresh_baselines = false;
  bool json = false;
  OpOverrides overrides;
  MeasureFlags measure;
};

}  // namespace

Command add_eval_command(CLI::App& app) {
  auto args = std::make_shared<EvalArgs>();
  CLI::App* sub = app.add_subcommand("eval", "Evaluate a candidate against an operator: correctness, timing, reward");
  sub->add_option("candidate", args->candidate, "Candidate .cu file, or a KernelBench ModelNew solution .py")
      ->required()
      ->check(CLI::ExistingFile);
  sub->add_option("--op", args->op, "op.json or KernelBench .py")->required()->check(CLI::ExistingFile);
  sub->add_option("--gpu", args->gpu, "GPU index")->check(CLI::NonNegativeNumber);
  sub->add_option("--trials", args->trials, "Correctness trials (default: the op's)")->check(CLI::Range(1, 100));
  sub->add_option("--arch", args->arch, "Compile target (default: the GPU's)");
  sub->add_option("--precision", args->precision,
                  "fp32, tf32, fp16 or bf16 (default: the op's; the tolerance follows unless op.json sets one)");
  sub->add_option("--timeout", args->timeout_s, "Wall-clock limit for the GPU part, seconds (default 60)")
      ->check(CLI::Range(1.0, 3600.0));
  sub->add_flag("--no-timing", args->no_timing, "Correctness only");
  sub->add_flag("--refresh-baselines", args->refresh_baselines,
                "PyTorch references: re-measure torch eager and torch.compile instead of using the cache");
  sub->add_flag("--json", args->json, "Print JSON");
  add_op_flags(sub, &args->overrides);
  add_measure_flags(sub, &args->measure);

  return {
      sub, [args]() {
        Op op = load_op(args->op);
        if (!args->precision.empty()) op = with_precision(std::move(op), precision_option(args->precision));
        args->overrides.apply(op);
        Candidate cand = load_candidate(args->candidate);
        EvalOptions opt;
        opt.gpu = args->gpu;
        opt.arch = args->arch;
        opt.trials = args->trials;
        opt.timing = !args->no_timing;
        opt.refresh_baselines = args->refresh_baselines;
        opt.timeout = std::chrono::milliseconds(static_cast<int64_t>(args->timeout_s * 1000));
        args->measure.apply(opt);
        auto cache = std::make_shared<CompileCache>(CompileCache::default_dir());
        Evaluator ev(opt, cache);
        if (const std::string& no_gpu = ev.gpu_problem(); !no_gpu.empty()) {
          // Compile errors are the candidate's failure (exit 1) even on a machine without a GPU.
          CompileResult r = ev.compile(cand, op);
          if (!r.ok) {
            if (args->json)
              print_json({{"candidate", args->candidate}, {"tier", -1}, {"compile", {{"ok", false}, {"log", r.log}}}});
            else
              fmt::print("{}: compile failed ({})\n{}\ntier -1: does not compile\n", args->candidate, ev.arch(), r.log);
            return static_cast<int>(ExitCode::failed);
          }
          throw EnvError(no_gpu);
        }
        EvalReport rep = ev.evaluate(op, cand);
        if (args->json)
          print_json(report_json(rep));
        else
          fmt::print("{}", render_report(rep));
        return static_cast<int>(rep.reward.tier > 0 ? ExitCode::ok : ExitCode::failed);
      }};
}

}  // namespace kagent::cli
