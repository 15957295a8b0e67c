// kagent optimize OP: the main job. An LLM writes and improves a kernel for one operator in a
// ReAct loop until it calls finish or its budget runs out; every evaluation is scored with the
// reward; the run directory keeps transcript.jsonl, candidates/NNN.cu, best.cu, result.json, and
// --resume DIR continues a killed run. Exit 0 when the run ended with a correct candidate, 1 when
// none was correct, 2 bad input, 3 environment (no endpoint).
#include <unistd.h>

#include <csignal>
#include <ctime>
#include <memory>

#include <fmt/format.h>

#include "commands.hpp"
#include "kagent/agent/agent.hpp"
#include "kagent/agent/prompts.hpp"
#include "kagent/agent/run_folder.hpp"
#include "kagent/agent/task_text.hpp"
#include "kagent/common/error.hpp"
#include "kagent/common/files.hpp"
#include "kagent/common/json_parse.hpp"
#include "kagent/common/text_table.hpp"
#include "kagent/compile/options.hpp"
#include "kagent/gpu/devices.hpp"
#include "kagent/llm/config.hpp"
#include "kagent/tools/file_tools.hpp"
#include "kagent/tools/kernel_tools.hpp"
#include "kagent/tools/shell_tool.hpp"

namespace kagent::cli {

namespace {

namespace fs = std::filesystem;

struct OptimizeArgs {
  std::string op;
  llm::LlmFlags llm;
  int turns = 0;
  double minutes = 0;
  int64_t max_tokens = 0;
  std::string out, resume, prompts, skills, arch;
  std::string precision;  // empty: the op's (or, resuming, the run's)
  int gpu = 0;
  bool json = false, quiet = false, no_shell = false;
  OpOverrides overrides;
};

void on_sigint(int) {
  llm::cancel_flag().store(true);
}

std::string timestamp() {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  localtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y%m%d-%H%M%S", &tm);
  return buf;
}

// "1200+80", or "~1200+~80" when some figure is kagent's estimate (the server sent no usage).
std::string tokens_text(const llm::Usage& u, const char* sep) {
  const char* mark = u.estimated ? "~" : "";
  return fmt::format("{}{}{}{}{}", mark, u.input_tokens, sep, mark, u.output_tokens);
}

std::string speed(const std::optional<double>& s) {
  return s ? fmt::format("{:.3f}x", *s) : "-";
}

// A tool choice that names a tool must name one this run offers (the shell is off with --no-shell):
// a server would refuse the request, or force a call of a tool kagent cannot run, on every turn.
void check_tool_choice_names_a_tool(const llm::LlmConfig& c, const tools::ToolSet& tools) {
  if (c.tool_choice == "auto" || c.tool_choice == "required") return;
  std::vector<std::string> names;
  for (const auto& t : tools) {
    names.push_back(t->spec().name);
    if (names.back() == c.tool_choice) return;
  }
  throw InputError(fmt::format(
      "tool_choice '{}' (from {}): this run offers no such tool; expected auto, required or "
      "one of: {}",
      c.tool_choice, c.origin.count("tool_choice") ? c.origin.at("tool_choice") : "default", fmt::join(names, ", ")));
}

int run_optimize(OptimizeArgs a) {
  // The run folder: a fresh one, or the one being resumed (its run.json says which op and settings).
  const bool resuming = !a.resume.empty();
  fs::path out = resuming ? fs::path(a.resume) : fs::path(a.out);
  nlohmann::json run_info;
  if (resuming) {
    std::error_code ec;
    if (!fs::is_regular_file(out / "run.json", ec))
      throw InputError(fmt::format("--resume {}: no run.json there (not a kagent run folder)", out.string()));
    const std::string run_json = (out / "run.json").string();
    run_info = parse_json_input<nlohmann::json>(read_text_file(out / "run.json"), run_json);
    try {  // a damaged run.json (a key of the wrong type) is bad input, not an internal error
      if (a.op.empty()) a.op = run_info.at("op").get<std::string>();
      if (a.precision.empty()) a.precision = run_info.value("precision", "");
      for (auto [flag, key] : {std::pair{&a.llm.provider, "provider"},
                               {&a.llm.base_url, "base_url"},
                               {&a.llm.model, "model"},
                               {&a.llm.script, "script"},
                               {&a.llm.tool_choice, "tool_choice"}})
        if (flag->empty() && run_info.contains("llm") && run_info["llm"].contains(key)) *flag = run_info["llm"][key];
      // The run is scored as it started: its tolerance, unless a flag says otherwise.
      if (const auto* t = run_info.contains("tolerance") ? &run_info["tolerance"] : nullptr; t && t->is_object()) {
        if (!a.overrides.atol && t->contains("atol")) a.overrides.atol = t->at("atol").get<double>();
        if (!a.overrides.rtol && t->contains("rtol")) a.overrides.rtol = t->at("rtol").get<double>();
      }
    } catch (const nlohmann::json::exception& e) {
      throw InputError(fmt::format("{}: not a kagent run record ({})", run_json, e.what()));
    }
  }
  if (a.op.empty()) throw InputError("optimize: give an operator (op.json or KernelBench .py) or --resume DIR");
  Op op = load_op(a.op);
  if (!a.precision.empty()) op = with_precision(std::move(op), precision_option(a.precision));
  a.overrides.apply(op);
  // The op's name is the problem file's text: one safe path component, never a path of its own.
  if (out.empty()) out = fs::path("runs") / fmt::format("{}-{}", agent::run_folder_name(op.name), timestamp());
  std::error_code ec;
  if (!resuming && fs::exists(out / "transcript.jsonl", ec))
    throw InputError(
        fmt::format("--out {}: that folder already holds a run; continue it with --resume {} or choose "
                    "another --out",
                    out.string(), out.string()));
  fs::create_directories(out / "workspace");
  if (!a.llm.script.empty()) a.llm.script = fs::absolute(a.llm.script).string();
  llm::LlmConfig llm_config = llm::resolve_llm_config(a.llm, op.llm);
  auto provider = llm::make_provider(llm_config);

  agent::AgentOptions opt;
  opt.max_turns = a.turns > 0 ? a.turns : op.budget.turns;
  opt.max_minutes = a.minutes > 0 ? a.minutes : op.budget.minutes;
  opt.max_tokens = a.max_tokens > 0 ? a.max_tokens : op.budget.tokens;
  opt.tool_choice = llm_config.tool_choice;

  // The GPU side is optional: without one, compile still works and evaluations say why not.
  auto cache = std::make_shared<CompileCache>(CompileCache::default_dir());
  Compiler compiler(find_cuda_paths(), cache);
  tools::KernelToolContext ktx;
  ktx.op = op;
  ktx.compiler = &compiler;
  EvalOptions eo;
  eo.gpu = a.gpu;
  eo.arch = a.arch;
  auto evaluator = std::make_unique<Evaluator>(eo, cache);
  agent::TimingFacts timing;
  timing.not_measured = "no GPU";
  try {
    if (const std::string& no_gpu = evaluator->gpu_problem(); !no_gpu.empty()) throw EnvError(no_gpu);
    ktx.arch = evaluator->arch();
    timing.not_measured.clear();
    if (op.ref_kind == RefKind::python) {
      const ResolvedOp resolved = evaluator->resolve(op);
      ktx.op = resolved.op;
      const RefBaselines& b = evaluator->pytorch_baselines(resolved);
      timing.eager_ms = b.eager.median_ms;
      if (b.compile) timing.compile_ms = b.compile->median_ms;
      timing.compile_missing = b.compile_error;
    } else {
      timing.native_reference = true;
      timing.compile_ms = op.compile_baseline_ms;
    }
    // The memory floor at this GPU's measured copy bandwidth (cached per GPU and driver; about a
    // second to measure the first time), else at a datasheet figure, said as such.
    std::string why;
    if (resuming) {
      // The task was written when the run started; nothing to measure for it.
    } else if (auto peaks = evaluator->device_peaks(&why); peaks && peaks->copy_gbs > 0) {
      timing.bandwidth_gbs = peaks->copy_gbs;
      timing.bandwidth_source = fmt::format(
          "this GPU's measured copy bandwidth (evaluation reports give a lower \"memory floor\" at the theoretical "
          "{:.0f} GB/s, which no kernel reaches)",
          peaks->theoretical_gbs);
    } else if (GpuInventory inv = query_gpus(); a.gpu < static_cast<int>(inv.gpus.size())) {
      timing.bandwidth_gbs = agent::datasheet_bandwidth_gbs(inv.gpus[static_cast<size_t>(a.gpu)].name);
      timing.bandwidth_source =
          fmt::format("this GPU's datasheet bandwidth (no measured one: {}); copies reach about 89% of it", why);
    }
  } catch (const EnvError& e) {
    ktx.no_gpu_reason = e.what();
    timing.not_measured = fmt::format("no GPU: {}", e.what());
    ktx.arch = evaluator->arch();  // --arch, the GPU's, or the compile-only default
    evaluator.reset();             // the tools say evaluations are unavailable, and why
  }
  ktx.evaluator = evaluator.get();

  tools::Workspace ws(out / "workspace");
  if (!resuming && op.start) write_file_atomic(ws.root() / op.start->filename(), read_text_file(*op.start));
  tools::ToolSet tools = tools::make_file_tools(ws);
  std::string shell_note = "shell is off (--no-shell)";
  if (!a.no_shell) {
    tools::ShellSandbox sb = tools::probe_shell_sandbox();
    if (auto shell = tools::make_shell_tool(ws, sb)) {
      tools.push_back(std::move(shell));
      shell_note = "";
    } else {
      shell_note = "shell is off: " + sb.reason;
    }
  }
  for (auto& t : tools::make_kernel_tools(ws, ktx)) tools.push_back(std::move(t));
  check_tool_choice_names_a_tool(llm_config, tools);

  agent::Transcript transcript(out / "transcript.jsonl");
  agent::RunRecord record(out, transcript);
  ktx.on_evaluated = [&](const std::string& path, const std::string& source, const EvalReport& r) {
    record.evaluated(path, source, r);
  };

  agent::RunState state;
  if (resuming) {
    auto events = agent::Transcript::read(out / "transcript.jsonl");
    try {  // a damaged transcript (an event of the wrong shape) is bad input, not an internal error
      for (const auto& e : events)
        if (e.value("type", "") == "stop" && e.value("reason", "") == "finish")
          throw InputError(fmt::format("--resume {}: that run already finished (see result.json)", out.string()));
      state = agent::RunState::from_transcript(events);
      record.restore(events);
    } catch (const nlohmann::json::exception& e) {
      throw InputError(fmt::format("{}: not a kagent transcript ({})", (out / "transcript.jsonl").string(), e.what()));
    }
    transcript.write({{"type", "resume"}, {"turns", state.turns}, {"llm", llm_config.describe()}});
  } else {
    std::map<std::string, std::string> values =
        agent::task_values(op, ktx.op, timing, agent::gpu_text(a.gpu), opt, tools, shell_note);
    auto opening = agent::opening_messages(a.prompts.empty() ? agent::default_prompts_dir() : fs::path(a.prompts),
                                           a.skills.empty() ? agent::default_skills_dir() : fs::path(a.skills), values);
    run_info = {{"op", fs::absolute(a.op).string()},
                {"precision", std::string(precision_name(op.precision))},
                {"llm",
                 {{"provider", std::string(llm::provider_name(llm_config.provider))},
                  {"base_url", llm_config.base_url},
                  {"model", llm_config.model},
                  {"script", llm_config.script},
                  {"tool_choice", llm_config.tool_choice}}},
                {"tolerance", {{"atol", op.tolerance.atol}, {"rtol", op.tolerance.rtol}}},
                {"started", timestamp()}};
    write_file_atomic(out / "run.json", run_info.dump(2) + "\n");
    transcript.write({{"type", "start"},
                      {"op", op.name},
                      {"llm", llm_config.describe()},
                      {"budget", {{"turns", opt.max_turns}, {"minutes", opt.max_minutes}, {"tokens", opt.max_tokens}}},
                      {"gpu", ktx.no_gpu_reason.empty() ? "available" : ktx.no_gpu_reason}});
    for (const auto& m : opening) {
      transcript.write({{"type", "message"}, {"message", m}});
      state.messages.push_back(m);
    }
  }
  if (!a.quiet && !a.json)
    fmt::print(stderr, "kagent optimize {} -> {}\n  llm: {}\n{}", op.name, out.string(), llm_config.describe(),
               ktx.no_gpu_reason.empty() ? "" : "  no GPU: evaluations are unavailable (" + ktx.no_gpu_reason + ")\n");

  auto on_turn = [&](const agent::TurnStatus& s) {
    if (a.quiet || a.json) return;
    fmt::print(stderr, "turn {}/{}  {}  last tier {}  best {}  tokens {}{}\n", s.turn, s.max_turns, s.tools,
               s.last_tier ? std::to_string(*s.last_tier) : "-",
               s.best ? fmt::format("tier {} ({} vs compile, {} vs eager)", s.best->tier,
                                    speed(s.best->speedup_vs_compile), speed(s.best->speedup_vs_eager))
                      : "-",
               tokens_text(s.usage, "+"), s.usage.estimated ? " (estimated)" : "");
  };
  llm::cancel_flag().store(false);
  auto previous = std::signal(SIGINT, on_sigint);
  agent::Agent ag(*provider, tools, transcript, record, opt, on_turn);
  agent::RunResult res;
  try {
    res = ag.run(std::move(state));
  } catch (...) {
    std::signal(SIGINT, previous);
    throw;
  }
  std::signal(SIGINT, previous);

  nlohmann::json result = {{"op", op.name},
                           {"stop_reason", res.stop_reason},
                           {"turns", res.turns},
                           {"requests", res.requests},
                           {"input_tokens", res.usage.input_tokens},
                           {"output_tokens", res.usage.output_tokens},
                           {"tokens_estimated", res.usage.estimated},
                           {"wall_s", res.wall_s},
                           {"evaluations", record.evaluations()},
                           {"final", ktx.finished_path ? nlohmann::json(*ktx.finished_path) : nlohmann::json()},
                           {"summary", ktx.finish_summary},
                           {"llm", llm_config.describe()},
                           {"precision", precision_name(op.precision)},
                           {"tolerance", {{"atol", op.tolerance.atol}, {"rtol", op.tolerance.rtol}}},
                           {"best", res.best ? res.best->to_json() : nlohmann::json()}};
  write_file_atomic(out / "result.json", result.dump(2) + "\n");
  if (a.json) {
    print_json(result);
  } else {
    TextTable t(
        {"run", "stopped", "turns", "tokens in/out", "wall s", "evaluations", "best tier", "vs eager", "vs compile"});
    t.add_row({out.string(), res.stop_reason, std::to_string(res.turns), tokens_text(res.usage, "/"),
               fmt::format("{:.1f}", res.wall_s), std::to_string(record.evaluations()),
               res.best ? std::to_string(res.best->tier) : "-", res.best ? speed(res.best->speedup_vs_eager) : "-",
               res.best ? speed(res.best->speedup_vs_compile) : "-"});
    fmt::print("{}", t.render());
    if (res.best) fmt::print("best: {}/best.cu (from {})\n", out.string(), res.best->path);
  }
  return static_cast<int>(res.best && res.best->tier > 0 ? ExitCode::ok : ExitCode::failed);
}

}  // namespace

Command add_optimize_command(CLI::App& app) {
  auto a = std::make_shared<OptimizeArgs>();
  CLI::App* sub =
      app.add_subcommand("optimize", "Let an LLM write and improve a kernel for an operator (the agent loop)");
  sub->add_option("op", a->op, "op.json or KernelBench .py (optional with --resume)");
  sub->add_option("--provider", a->llm.provider, "openai, anthropic or script");
  sub->add_option("--base-url", a->llm.base_url, "LLM endpoint base URL");
  sub->add_option("--model", a->llm.model, "Model name");
  sub->add_option("--api-key-env", a->llm.api_key_env, "Environment variable holding the API key");
  sub->add_flag("--allow-op-endpoint", a->llm.allow_op_endpoint,
                "Let the op.json's llm section choose provider, base_url, api_key_env and script (by default a "
                "problem file may set the model and generation settings only)");
  sub->add_option("--script", a->llm.script, "JSONL file of assistant turns (provider script)");
  sub->add_option("--tool-choice", a->llm.tool_choice,
                  "auto (default), required, or a tool's name: whether the model must call a tool each turn");
  sub->add_option("--turns", a->turns, "Turn budget (default: the op's)")->check(CLI::Range(1, 10000));
  sub->add_option("--minutes", a->minutes, "Time budget (default: the op's)")->check(CLI::Range(0.01, 100000.0));
  sub->add_option("--max-tokens", a->max_tokens, "Token budget, input + output (default: the op's; 0 none)");
  sub->add_option("--out", a->out, "Run folder (default runs/<op>-<timestamp>)");
  sub->add_option("--resume", a->resume, "Continue the run in this folder");
  sub->add_option("--gpu", a->gpu, "GPU index")->check(CLI::NonNegativeNumber);
  sub->add_option("--arch", a->arch, "Compile target (default: the GPU's)");
  sub->add_option("--precision", a->precision,
                  "fp32, tf32, fp16 or bf16 (default: the op's; the tolerance follows unless op.json sets one)");
  sub->add_option("--prompts", a->prompts, "Folder with system.md and task.md (default: kagent's prompts/)");
  sub->add_option("--skills", a->skills, "Folder of skills (*/SKILL.md; default: kagent's skills/)");
  sub->add_flag("--no-shell", a->no_shell, "Do not give the model a shell");
  sub->add_flag("--json", a->json, "Print result.json at the end instead of the table");
  sub->add_flag("--quiet", a->quiet, "No per-turn status lines");
  add_op_flags(sub, &a->overrides);
  return {sub, [a]() { return run_optimize(*a); }};
}

}  // namespace kagent::cli
