// kagent profile CAND.cu --op OP: the profile the agent's profile tool shows, for people: per launch
// the grid, block, registers, shared memory, theoretical occupancy and its limiter, the launch's
// time by events and by CUPTI, hardware counters and the roofline against this GPU's measured
// peaks; for the whole plan the median, bandwidth, ideal time and a verdict. --compact prints the
// agent's form.
// Exit 0 profiled (correct), 1 does not compile or not correct, 2 bad input, 3 no GPU (the
// static part is still printed).
#include <memory>

#include <fmt/format.h>

#include "commands.hpp"
#include "compile_report.hpp"
#include "help_format.hpp"
#include "kagent/common/error.hpp"
#include "kagent/eval/evaluator.hpp"
#include "kagent/eval/profile_table.hpp"
#include "kagent/spec/op.hpp"

namespace kagent::cli {

Command add_profile_command(CLI::App& app) {
  struct Args {
    std::string candidate, op, arch;
    int gpu = 0;
    double timeout_s = 60;
    bool json = false, compact = false, refresh_peaks = false;
    OpOverrides overrides;
    MeasureFlags measure;
  };
  auto a = std::make_shared<Args>();
  CLI::App* sub = app.add_subcommand(
      "profile", "Profile a candidate: occupancy, times (events, CUPTI), counters, roofline, verdict");
  set_examples(sub, {
                        {"kagent profile examples/softmax/cand_online.cu --op examples/softmax",
                         "per launch: occupancy, hardware counters, the limiter and the roofline"},
                        {"kagent profile cand.cu --op level1/19 --compact", "what the agent's profile tool returns"},
                    });
  sub->add_option("candidate", a->candidate, "Candidate .cu file")->required()->check(CLI::ExistingFile);
  sub->add_option("--op", a->op, "op.json, KernelBench .py, or an id like level1/19 under $KAGENT_KERNELBENCH_DIR")
      ->required()
      ->transform(op_path());
  sub->add_option("--gpu", a->gpu, "GPU index")->check(CLI::NonNegativeNumber);
  sub->add_option("--arch", a->arch, "Compile target (default: the GPU's)");
  sub->add_option("--timeout", a->timeout_s, "Wall-clock limit for the GPU part, seconds (default 60)")
      ->check(CLI::Range(1.0, 3600.0));
  sub->add_flag("--json", a->json, "Print JSON");
  sub->add_flag("--compact", a->compact, "Print the agent's form: one line per launch and the verdict");
  sub->add_flag("--refresh-peaks", a->refresh_peaks,
                "Measure the GPU's copy bandwidth, FP32 and tensor-core rates again instead of reading the cache");
  add_op_flags(sub, &a->overrides);
  add_measure_flags(sub, &a->measure);
  return {sub, [a]() {
            Op op = load_op(a->op);
            a->overrides.apply(op);
            Candidate cand = load_candidate(a->candidate);
            auto cache = std::make_shared<CompileCache>(CompileCache::default_dir());
            EvalOptions opt;
            opt.gpu = a->gpu;
            opt.arch = a->arch;
            opt.timeout = std::chrono::milliseconds(static_cast<int64_t>(a->timeout_s * 1000));
            opt.refresh_peaks = a->refresh_peaks;
            a->measure.apply(opt);
            auto print = [&](const profile::ProfileOutput& out) {
              if (a->json)
                print_json(out.record);
              else if (a->compact)
                fmt::print("{}", out.compact);
              else
                fmt::print("{}: {}\n{}", a->candidate, op.name, out.text);
            };
            Evaluator ev(opt, cache);
            if (const std::string& no_gpu = ev.gpu_problem(); !no_gpu.empty()) {
              // Without a GPU: the static part (registers, shared memory, occupancy) still helps.
              CompileResult r = ev.compile(cand, op);
              if (!r.ok) {
                fmt::print("{}: compile failed ({})\n{}", a->candidate, ev.arch(), r.log);
                return static_cast<int>(ExitCode::failed);
              }
              print(profile::render_profile(op, cand, r, nullptr, no_gpu));
              return static_cast<int>(ExitCode::environment);
            }
            const ResolvedOp shapes = ev.resolve(op);
            EvalReport rep = ev.evaluate(shapes, cand, EvalMode::profile);
            if (!rep.compile.ok) {
              fmt::print("{}: compile failed ({})\n{}", a->candidate, rep.arch, rep.compile.log);
              return static_cast<int>(ExitCode::failed);
            }
            print(profile::render_profile(shapes.op, cand, rep.compile, &rep, ""));
            return static_cast<int>(rep.outcome.correct ? ExitCode::ok : ExitCode::failed);
          }};
}

}  // namespace kagent::cli
