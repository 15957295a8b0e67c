// kagent eval CAND.cu --op OP : the verdict on a candidate. This build does everything that needs
// no GPU (operator and plan validation, compilation of candidate and native reference, plan
// checks against the compiled kernels) and then hands over to the GPU evaluator.
#include <memory>

#include <fmt/format.h>

#include "commands.hpp"
#include "compile_report.hpp"
#include "kagent/common/error.hpp"
#include "kagent/compile/compiler.hpp"
#include "kagent/gpu/devices.hpp"
#include "kagent/spec/op.hpp"

namespace kagent::cli {

namespace {

struct EvalArgs {
  std::string candidate;
  std::string op;
  std::string arch;
  int gpu = 0;
  int trials = 0;  // 0: the op's correctness_trials
  bool json = false;
};

}  // namespace

Command add_eval_command(CLI::App& app) {
  auto args = std::make_shared<EvalArgs>();
  CLI::App* sub = app.add_subcommand("eval", "Evaluate a candidate against an operator: correctness, timing, reward");
  sub->add_option("candidate", args->candidate, "Candidate .cu file")->required()->check(CLI::ExistingFile);
  sub->add_option("--op", args->op, "op.json or KernelBench .py")->required()->check(CLI::ExistingFile);
  sub->add_option("--gpu", args->gpu, "GPU index")->check(CLI::NonNegativeNumber);
  sub->add_option("--trials", args->trials, "Correctness trials (default: the op's)")->check(CLI::Range(1, 100));
  sub->add_option("--arch", args->arch, "Compile target (default: the GPU's)");
  sub->add_flag("--json", args->json, "Print JSON");

  return {sub, [args]() {
            Op op = load_op(args->op);
            Candidate cand = load_candidate(args->candidate);
            std::string arch_source = "--arch";
            std::string arch = args->arch.empty() ? default_arch(args->gpu, &arch_source) : args->arch;
            Compiler compiler(find_cuda_paths(), std::make_shared<CompileCache>(CompileCache::default_dir()));

            CompileResult r = compile_checked(cand, &op, compiler, arch);
            nlohmann::json out = {{"candidate", args->candidate}, {"op", op.name}, {"compile", compile_json(args->candidate, r)}};
            if (!r.ok) {
              out["tier"] = -1;
              out["verdict"] = "does not compile";
              if (args->json) print_json(out);
              else fmt::print("{}: compile failed ({})\n{}\ntier -1: does not compile\n", args->candidate, arch, r.log);
              return static_cast<int>(ExitCode::failed);
            }
            if (op.ref_kind == RefKind::cuda) {
              Candidate ref = load_candidate(op.reference);
              CompileResult rr = compile_checked(ref, &op, compiler, arch);
              if (!rr.ok)
                throw InputError(fmt::format("{}: the native reference does not compile:\n{}", op.reference.string(), rr.log));
            }
            if (!args->json) fmt::print("{}  {}  compiled ({:.3f} s{})\n{}\n", args->candidate, arch, r.seconds,
                                        r.cache_hit ? ", cached" : "", render_kernel_table(r));

            GpuInventory inv = query_gpus();
            if (inv.gpus.empty()) throw EnvError(fmt::format("no GPU to evaluate on: {}", inv.problem));
            if (op.ref_kind == RefKind::python)
              throw EnvError(fmt::format("{}: PyTorch references need the reference server, which this build lacks",
                                         op.path.string()));
            throw EnvError("GPU evaluation needs the kagent-runner evaluator, which this build lacks");
          }};
}

}  // namespace kagent::cli
