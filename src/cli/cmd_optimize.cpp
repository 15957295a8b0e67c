// kagent optimize OP: the main job. An LLM writes and improves a kernel for one operator in a
// ReAct loop until it calls finish or its budget runs out; every evaluation is scored with the
// reward; the run directory keeps transcript.jsonl, candidates/NNN.cu (or .py), best.cu (or best.py), result.json, and
// --resume DIR continues a killed run. Exit 0 when the run ended with a correct candidate, 1 when
// none was correct, 2 bad input, 3 environment (no endpoint). The run itself is composed in the
// library (agent/optimize_run.hpp); this file turns flags into its options and prints.
#include <memory>

#include <fmt/format.h>

#include "commands.hpp"
#include "help_format.hpp"
#include "kagent/agent/optimize_run.hpp"
#include "kagent/common/error.hpp"
#include "kagent/common/text_table.hpp"

namespace kagent::cli {

namespace {

namespace fs = std::filesystem;

struct OptimizeArgs {
  agent::OptimizeRunOptions run;
  std::string options_file;  // --options FILE: the run's options as one JSON document (bench --agent)
  bool json = false, quiet = false;
};

// "1200+80", or "~1200+~80" when some figure is kagent's estimate (the server sent no usage).
std::string tokens_text(const llm::Usage& u, const char* sep) {
  const char* mark = u.estimated ? "~" : "";
  return fmt::format("{}{}{}{}{}", mark, u.input_tokens, sep, mark, u.output_tokens);
}

std::string speed(const std::optional<double>& s) {
  return s ? fmt::format("{:.3f}x", *s) : "-";
}

int run_optimize(const OptimizeArgs& a) {
  agent::OptimizeRunHooks hooks;
  hooks.on_start = [&](const agent::OptimizeRunStart& s) {
    if (!a.quiet && !a.json)
      fmt::print(stderr, "kagent optimize {} -> {}\n  llm: {}\n  context window: {}\n{}", s.op, s.out.string(), s.llm,
                 s.context,
                 s.no_gpu_reason.empty() ? "" : "  no GPU: evaluations are unavailable (" + s.no_gpu_reason + ")\n");
  };
  hooks.on_turn = [&](const agent::TurnStatus& s) {
    if (a.quiet || a.json) return;
    fmt::print(stderr, "turn {}/{}  {}  last tier {}  best {}  tokens {}{}\n", s.turn, s.max_turns, s.tools,
               s.last_tier ? std::to_string(*s.last_tier) : "-",
               s.best ? fmt::format("tier {} ({} vs compile, {} vs eager)", s.best->score.tier,
                                    speed(s.best->score.speedup_vs_compile), speed(s.best->score.speedup_vs_eager))
                      : "-",
               tokens_text(s.usage, "+"), s.usage.estimated ? " (estimated)" : "");
  };
  agent::OptimizeRunOutcome run =
      agent::run_optimize(a.options_file.empty() ? a.run : agent::load_optimize_options(a.options_file), hooks);
  const fs::path& out = run.out;
  const agent::RunResult& res = run.result;
  if (a.json) {
    print_json(run.result_json);
  } else {
    TextTable t(
        {"run", "stopped", "turns", "tokens in/out", "wall s", "evaluations", "best tier", "vs eager", "vs compile"});
    t.add_row({out.string(), res.stop_reason, std::to_string(res.turns), tokens_text(res.usage, "/"),
               fmt::format("{:.1f}", res.wall_s), std::to_string(run.evaluations),
               res.best ? std::to_string(res.best->score.tier) : "-",
               res.best ? speed(res.best->score.speedup_vs_eager) : "-",
               res.best ? speed(res.best->score.speedup_vs_compile) : "-"});
    fmt::print("{}", t.render());
    if (res.best) fmt::print("best: {}/{} (from {})\n", out.string(), res.best->best_file(), res.best->path);
  }
  if (res.stop_reason == "cancelled") {
    fmt::print(stderr,
               "kagent optimize: interrupted; {} holds the run (result.json); continue it with: kagent optimize "
               "--resume {}\n",
               out.string(), out.string());
    return static_cast<int>(ExitCode::environment);
  }
  return static_cast<int>(res.best && res.best->score.correct() ? ExitCode::ok : ExitCode::failed);
}

}  // namespace

Command add_optimize_command(CLI::App& app) {
  auto a = std::make_shared<OptimizeArgs>();
  agent::OptimizeRunOptions& r = a->run;
  CLI::App* sub =
      app.add_subcommand("optimize", "Let an LLM write and improve a kernel for an operator (the agent loop)");
  set_examples(
      sub, {
               {"kagent optimize examples/softmax --provider anthropic --model claude-sonnet-4-5 --minutes 30",
                "the agent loop on a native op, for at most 30 minutes"},
               {"kagent optimize level1/19 --base-url http://127.0.0.1:8000/v1 --model qwen3 --turns 40",
                "a KernelBench problem against an OpenAI-compatible server"},
               {"kagent optimize --resume runs/softmax-20261130-101500", "continues a run that was stopped or killed"},
           });
  sub->add_option(
         "op", r.op,
         "op.json, KernelBench .py, or an id like level1/19 under $KAGENT_KERNELBENCH_DIR (optional with --resume)")
      ->transform(op_path());
  add_llm_flags(sub, &r.llm, LlmFlagsFor::optimize);
  sub->add_option("--turns", r.turns, "Turn budget (default: the op's)")->check(CLI::Range(1, 10000));
  sub->add_option("--minutes", r.minutes, "Time budget (default: the op's)")->check(CLI::Range(0.01, 100000.0));
  sub->add_option("--max-tokens", r.max_tokens, "Token budget, input + output (default: the op's; 0 none)");
  sub->add_option("--out", r.out, "Run folder (default runs/<op>-<timestamp>)");
  sub->add_option("--resume", r.resume, "Continue the run in this folder");
  sub->add_option("--gpu", r.gpu, "GPU index")->check(CLI::NonNegativeNumber);
  sub->add_option("--arch", r.arch, "Compile target (default: the GPU's)");
  sub->add_option("--precision", r.precision,
                  "fp32, tf32, fp16 or bf16 (default: the op's; the tolerance follows unless op.json sets one)");
  sub->add_option("--prompts", r.prompts, "Folder with system.md and task.md (default: kagent's prompts/)");
  sub->add_option("--skills", r.skills, "Folder of skills (*/SKILL.md; default: kagent's skills/)");
  sub->add_flag("--no-shell", r.no_shell, "Do not give the model a shell");
  sub->add_flag("--without-gpu", r.without_gpu,
                "Run without a usable GPU: the model compiles but cannot evaluate (default: exit 3 before the first "
                "request)");
  sub->add_flag("--json", a->json, "Print result.json at the end instead of the table");
  sub->add_flag("--quiet", a->quiet, "No per-turn status lines");
  add_op_flags(sub, &r.overrides);
  // Hidden: how bench --agent hands a child its options (agent/optimize_run.hpp's to_json), in
  // place of every flag above but --json and --quiet.
  CLI::Option* options = sub->add_option("--options", a->options_file, "")->group("")->check(CLI::ExistingFile);
  return {
      sub, [a, sub, options]() {
        if (!a->options_file.empty())
          for (const CLI::Option* o : sub->get_options()) {
            // The long name as typed ("--turns"); positionals by their name ("op").
            const std::string name = o->get_name(false, true);
            if (o != options && o->count() > 0 && name != "--json" && name != "--quiet" && name != "--help,-h" &&
                name != "-h,--help")
              throw InputError(fmt::format("optimize: --options FILE gives every setting; {} cannot be added", name));
          }
        return run_optimize(*a);
      }};
}

}  // namespace kagent::cli
