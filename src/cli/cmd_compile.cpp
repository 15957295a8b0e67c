// kagent compile CAND.cu... : NVRTC compilation and the per-kernel resource table. Needs no GPU.
#include <algorithm>
#include <memory>

#include <fmt/format.h>

#include "commands.hpp"
#include "compile_report.hpp"
#include "help_format.hpp"
#include "kagent/common/error.hpp"
#include "kagent/compile/compiler.hpp"
#include "kagent/compile/options.hpp"
#include "kagent/compile/sass.hpp"
#include "kagent/eval/candidate_kind.hpp"
#include "kagent/spec/op.hpp"
#include "kagent/spec/plan_limits.hpp"

namespace kagent::cli {

namespace {

struct CompileArgs {
  std::vector<std::string> candidates;
  std::string arch;
  std::string op;
  int gpu = 0;
  bool json = false;
  bool no_cache = false;
  bool sass = false;   // also print the SASS (nvdisasm) of each kernel
  std::string kernel;  // with sass: only this kernel
};

// One candidate: parse, compile, check the plan against the kernels (and the op's tensors).
// Returns its exit code; bad input is reported as a message, not thrown, so the other files
// still get compiled and reported.
int compile_one(const std::string& path, const Compiler& compiler, const std::string& arch, const Op* op,
                nlohmann::json& json_out, const CompileArgs& args) {
  const bool json = args.json;
  CompileResult r;
  std::vector<std::string> steps;  // the plan's library steps, which compile to no kernel here
  try {
    Candidate cand = load_candidate(path);
    for (size_t i = 0; i < cand.plan.launches.size(); ++i)
      if (cand.plan.launches[i].kind != StepKind::kernel)
        steps.push_back(fmt::format("launch[{}]: {} step ({} at run time)", i,
                                    step_kind_name(cand.plan.launches[i].kind),
                                    cand.plan.launches[i].kind == StepKind::gemm ? "cuBLASLt" : "cuDNN"));
    // The plan against the target's launch limits (with the op's shapes where known) and the
    // kernels' parameters: compile_checked, as every evaluation does.
    r = kind_of(cand).compile(cand, op, compiler, arch);
  } catch (const InputError& e) {
    if (json)
      json_out.push_back({{"candidate", path}, {"ok", false}, {"error", e.what()}, {"exit_code", 2}});
    else
      fmt::print(stderr, "kagent: error: {}\n", e.what());
    return static_cast<int>(ExitCode::bad_input);
  }
  const int rc = static_cast<int>(r.ok ? ExitCode::ok : ExitCode::failed);
  if (json) {
    auto j = compile_json(path, r);
    j["exit_code"] = rc;
    if (!r.plan_checks.empty()) j["plan_checks"] = r.plan_checks;
    if (!steps.empty()) j["library_steps"] = steps;
    json_out.push_back(std::move(j));
    return rc;
  }
  if (!r.ok) {
    fmt::print("{}: compile failed ({})\n{}\n", path, r.arch, r.log);
    return rc;
  }
  fmt::print("{}  {}  {:.3f} s{}\n", path, r.arch, r.seconds, r.cache_hit ? " (cached)" : "");
  if (!r.log.empty()) fmt::print("{}", r.log);  // warnings
  fmt::print("{}\n", render_kernel_table(r));
  for (const auto& s : steps) fmt::print("{}\n", s);
  if (!r.plan_checks.empty()) fmt::print("{}\n", r.plan_checks);
  if (args.sass) fmt::print("{}", render_sass(disassemble(r.cubin, find_cuda_paths()), true, args.kernel, SIZE_MAX));
  return rc;
}

}  // namespace

Command add_compile_command(CLI::App& app) {
  auto args = std::make_shared<CompileArgs>();
  CLI::App* sub = app.add_subcommand("compile", "Compile candidates with NVRTC and print their resource table");
  set_examples(sub, {
                        {"kagent compile examples/vector_add/cand_vec4.cu",
                         "registers, shared memory and spills of each kernel, for this GPU's architecture"},
                        {"kagent compile cand.cu --op examples/vector_add --arch sm_90a",
                         "also checks the plan's grids, blocks and tensor names against the op's shapes"},
                        {"kagent compile examples/vector_add/cand_vec4.cu --sass --kernel vector_add_vec4",
                         "adds the kernel's SASS with source lines and a summary of its instructions"},
                    });
  sub->add_option("candidates", args->candidates, "Candidate .cu files")->required()->check(CLI::ExistingFile);
  sub->add_option("--arch", args->arch, "Target, e.g. sm_90a (default: the GPU's, else sm_90a)");
  sub->add_option("--gpu", args->gpu, "GPU whose architecture is the default target")->check(CLI::NonNegativeNumber);
  sub->add_option("--op", args->op, "Also check plan tensor names against this op.json")->transform(op_path());
  sub->add_flag("--json", args->json, "Print JSON");
  sub->add_flag("--no-cache", args->no_cache, "Do not read or write the compile cache");
  sub->add_flag("--sass", args->sass,
                "Also print each kernel's SASS (the toolkit's nvdisasm, with source lines) and a summary: "
                "instructions, local-memory loads/stores (spills), most frequent opcodes");
  sub->add_option("--kernel", args->kernel, "With --sass: only this kernel");

  return {sub, [args]() {
            std::string arch_source = "--arch";
            std::string arch = args->arch.empty() ? default_arch(args->gpu, &arch_source) : args->arch;
            check_arch(arch);
            std::unique_ptr<Op> op;
            if (!args->op.empty()) op = std::make_unique<Op>(load_op(args->op));
            // A KernelBench problem's tensors are known only by running it: not checked here, and said so.
            if (op && !op->signature_known())
              fmt::print(stderr,
                         "kagent compile: note: {}: the plan's tensor names and shapes are not checked against it (a "
                         "KernelBench problem's tensors are known by running it: `kagent ref {}` lists them, `kagent "
                         "eval` checks them); only its precision is\n",
                         args->op, args->op);
            auto cache = args->no_cache ? nullptr : std::make_shared<CompileCache>(CompileCache::default_dir());
            Compiler compiler(find_cuda_paths(), cache);
            if (!args->json) fmt::print("target {} ({}), NVRTC {}\n\n", arch, arch_source, Compiler::nvrtc_version());

            nlohmann::json results = nlohmann::json::array();
            int worst = 0;
            for (const auto& path : args->candidates) {
              int rc = compile_one(path, compiler, arch, op.get(), results, *args);
              // Bad input outranks a failed compile: both are reported, the exit code says the worse.
              worst = std::max(worst, rc);
            }
            if (args->json)
              print_json({{"arch", arch},
                          {"arch_source", arch_source},
                          {"nvrtc", Compiler::nvrtc_version()},
                          {"results", results}});
            return worst;
          }};
}

}  // namespace kagent::cli
