// kagent eval CAND.cu --op OP : the verdict on a candidate: compile, correctness, timing, reward.
// kagent eval A.cu B.cu C.py ... --op OP : each candidate in turn through the judge's backend (one
// GPU, the problem kept between candidates), one line each, or with --json one record per line.
// Exit 0 correct (every candidate), 1 not correct or not compiled (any), 2 bad input (including an
// error in a PyTorch problem file; with several candidates, a plan that does not fit the problem),
// 3 environment (no GPU; for a PyTorch reference no python3 or torch).
#include <memory>

#include <fmt/format.h>

#include "commands.hpp"
#include "compile_report.hpp"
#include "help_format.hpp"
#include "kagent/common/error.hpp"
#include "kagent/eval/evaluator.hpp"
#include "kagent/judge/each.hpp"
#include "kagent/judge/evaluator_backend.hpp"
#include "kagent/judge/prebuild.hpp"
#include "kagent/judge/verdict.hpp"
#include "kagent/spec/op.hpp"

namespace kagent::cli {

namespace {

struct EvalArgs {
  std::vector<std::string> candidates;
  std::string candidate;  // the one, when there is one
  std::string op;
  std::string arch;
  std::string precision;  // empty: the op's
  int gpu = 0;
  int trials = 0;  // 0: the op's correctness_trials
  double timeout_s = 60;
  bool no_timing = false;
  bool refresh_baselines = false;
  bool json = false;
  int build_jobs = -1;  // -1: default_prebuild_threads
  OpOverrides overrides;
  MeasureFlags measure;
};

// Several candidates: each as `kagent eval CAND --op OP` with the same flags would judge it.
int eval_many(const EvalArgs& a) {
  judge::CandidateRequest base;
  base.problem = a.op;
  if (!a.precision.empty()) base.precision = precision_option(a.precision);
  a.overrides.validate();
  base.overrides = a.overrides;
  base.arch = a.arch;
  base.trials = a.trials;
  base.timing = !a.no_timing;
  base.refresh_baselines = a.refresh_baselines;
  base.timeout = std::chrono::milliseconds(static_cast<int64_t>(a.timeout_s * 1000));
  a.measure.validate();
  base.stop_rule = a.measure.stop_rule;
  base.knobs = a.measure.knobs;
  base.torch_ops = a.measure.torch_ops_or_default();
  base.baselines = a.measure.baselines;
  load_op(a.op);  // a bad problem is said once, before any candidate
  std::vector<judge::CandidateRequest> requests;
  for (const auto& c : a.candidates) {
    judge::CandidateRequest r = base;
    r.file = c;
    r.name = c;
    requests.push_back(std::move(r));
  }
  auto cache = std::make_shared<CompileCache>(CompileCache::default_dir());
  judge::EvaluatorBackend backend(a.gpu, cache);
  if (std::string why = backend.unavailable(); !why.empty()) throw EnvError(why);
  const std::shared_ptr<judge::Prebuilder> prebuilder = make_prebuilder(a.build_jobs, a.arch, a.gpu, 1, cache);
  const judge::EachOutcome out = judge::evaluate_each(
      backend, requests,
      [&](const nlohmann::json& record) {
        if (a.json)
          fmt::print("{}\n", record.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
        else if (record.contains("error"))
          fmt::print("{}: error: {}\n", record.value("candidate", ""), record.value("error", ""));
        else
          fmt::print("{}\n", judge::verdict_line(record));
        std::fflush(stdout);
      },
      prebuilder.get());
  if (prebuilder) {
    const judge::Prebuilder::Stats s = prebuilder->stats();
    fmt::print(stderr,
               "built ahead: {} candidate(s) on {} thread(s) in {:.1f} s from the first start to the last end{}\n",
               s.built, prebuilder->threads(), s.span_s,
               s.failed > 0 ? fmt::format(" ({} failed there and were built by their evaluation)", s.failed) : "");
  }
  if (!a.json)
    fmt::print("{} candidate(s): {} correct, {} not{}\n", requests.size(), out.correct, out.failed,
               out.refused > 0 ? fmt::format(", {} refused (bad input)", out.refused) : "");
  return static_cast<int>(out.refused > 0 ? ExitCode::bad_input : out.failed > 0 ? ExitCode::failed : ExitCode::ok);
}

}  // namespace

Command add_eval_command(CLI::App& app) {
  auto args = std::make_shared<EvalArgs>();
  CLI::App* sub = app.add_subcommand("eval", "Evaluate a candidate against an operator: correctness, timing, reward");
  set_examples(sub,
               {
                   {"kagent eval examples/vector_add/cand_vec4.cu --op examples/vector_add",
                    "one candidate: correctness over the seeded trials, timing, speedups and tier"},
                   {"kagent eval examples/kernelbench/level1/19_ReLU.cu --op level1/19 --tolerance 1e-2",
                    "a KernelBench problem by id (under $KAGENT_KERNELBENCH_DIR), at the CUDA Agent paper's tolerance"},
                   {"kagent eval samples/*.cu --op level1/19 --preset training --json",
                    "several candidates on one GPU, one JSON record each, measured as an RL reward is"},
               });
  sub->add_option("candidates", args->candidates,
                  "Candidate .cu file, or a KernelBench ModelNew solution .py; several: one line (or --json record) "
                  "each")
      ->required()
      ->check(CLI::ExistingFile);
  sub->add_option("--op", args->op, "op.json, KernelBench .py, or an id like level1/19 under $KAGENT_KERNELBENCH_DIR")
      ->required()
      ->transform(op_path());
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
  sub->add_option("--build-jobs", args->build_jobs,
                  "Several candidates: threads that compile and build the next candidates while one is measured "
                  "(default: the machine's cores less two; 0: each in its turn)")
      ->check(CLI::NonNegativeNumber);
  add_op_flags(sub, &args->overrides);
  add_measure_flags(sub, &args->measure);

  const Command one = {
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
  // Several candidates go through the judge's backend; one keeps its full report.
  return {sub, [args, run_one = one.run]() {
            if (args->candidates.size() > 1) return eval_many(*args);
            args->candidate = args->candidates.front();
            return run_one();
          }};
}

}  // namespace kagent::cli
