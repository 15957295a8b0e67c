#include "kagent/agent/optimize_run.hpp"

#include <unistd.h>

#include <csignal>
#include <ctime>
#include <memory>

#include <fmt/format.h>

#include "kagent/agent/episode.hpp"
#include "kagent/agent/result_file.hpp"
#include "kagent/agent/run_folder.hpp"
#include "kagent/agent/task_text.hpp"
#include "kagent/agent/transcript_events.hpp"
#include "kagent/common/error.hpp"
#include "kagent/common/files.hpp"
#include "kagent/common/json_parse.hpp"
#include "kagent/compile/default_arch.hpp"
#include "kagent/compile/options.hpp"
#include "kagent/gpu/devices.hpp"
#include "kagent/llm/context_window.hpp"
#include "kagent/model_tools/file_tools.hpp"
#include "kagent/model_tools/kernel_tools.hpp"
#include "kagent/model_tools/shell_tool.hpp"
#include "kagent/spec/precision_option.hpp"

namespace kagent::agent {

namespace {

namespace fs = std::filesystem;

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

// A tool choice that names a tool must name one this run offers (the shell is off with --no-shell):
// a server would refuse the request, or force a call of a tool kagent cannot run, on every turn.
void check_tool_choice_names_a_tool(const llm::LlmConfig& c, const model_tools::ToolSet& tools) {
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

}  // namespace

void to_json(nlohmann::json& j, const OptimizeRunOptions& o) {
  auto opt = [](const std::optional<double>& v) { return v ? nlohmann::json(*v) : nlohmann::json(); };
  j = {{"op", o.op},
       {"llm",
        {{"provider", o.llm.provider},
         {"base_url", o.llm.base_url},
         {"model", o.llm.model},
         {"api_key_env", o.llm.api_key_env},
         {"script", o.llm.script},
         {"tool_choice", o.llm.tool_choice},
         {"max_reply_bytes", o.llm.max_reply_bytes},
         {"max_tool_calls", o.llm.max_tool_calls},
         {"context_tokens", o.llm.context_tokens},
         {"allow_op_endpoint", o.llm.allow_op_endpoint}}},
       {"turns", o.turns},
       {"minutes", o.minutes},
       {"max_tokens", o.max_tokens},
       {"out", o.out},
       {"resume", o.resume},
       {"prompts", o.prompts},
       {"skills", o.skills},
       {"arch", o.arch},
       {"precision", o.precision},
       {"gpu", o.gpu},
       {"no_shell", o.no_shell},
       {"without_gpu", o.without_gpu},
       {"atol", opt(o.overrides.atol)},
       {"rtol", opt(o.overrides.rtol)}};
}

namespace {

// Every key of `j` must be one of `known` (a misspelt setting is refused, not ignored).
void only_keys(const nlohmann::json& j, std::initializer_list<const char*> known, const char* where) {
  if (!j.is_object()) throw InputError(fmt::format("{}: expected a JSON object", where));
  for (const auto& [key, value] : j.items()) {
    bool ok = false;
    for (const char* k : known) ok = ok || key == k;
    if (!ok) throw InputError(fmt::format("{}: unknown key '{}'", where, key));
  }
}

template <class T>
void read_key(const nlohmann::json& j, const char* key, T& into) {
  if (auto it = j.find(key); it != j.end()) into = it->get<T>();
}

}  // namespace

void from_json(const nlohmann::json& j, OptimizeRunOptions& o) {
  only_keys(j,
            {"op", "llm", "turns", "minutes", "max_tokens", "out", "resume", "prompts", "skills", "arch", "precision",
             "gpu", "no_shell", "without_gpu", "atol", "rtol"},
            "optimize options");
  o = OptimizeRunOptions{};
  read_key(j, "op", o.op);
  if (auto it = j.find("llm"); it != j.end()) {
    only_keys(*it,
              {"provider", "base_url", "model", "api_key_env", "script", "tool_choice", "max_reply_bytes",
               "max_tool_calls", "context_tokens", "allow_op_endpoint"},
              "optimize options: llm");
    read_key(*it, "provider", o.llm.provider);
    read_key(*it, "base_url", o.llm.base_url);
    read_key(*it, "model", o.llm.model);
    read_key(*it, "api_key_env", o.llm.api_key_env);
    read_key(*it, "script", o.llm.script);
    read_key(*it, "tool_choice", o.llm.tool_choice);
    read_key(*it, "max_reply_bytes", o.llm.max_reply_bytes);
    read_key(*it, "max_tool_calls", o.llm.max_tool_calls);
    read_key(*it, "context_tokens", o.llm.context_tokens);
    read_key(*it, "allow_op_endpoint", o.llm.allow_op_endpoint);
  }
  read_key(j, "turns", o.turns);
  read_key(j, "minutes", o.minutes);
  read_key(j, "max_tokens", o.max_tokens);
  read_key(j, "out", o.out);
  read_key(j, "resume", o.resume);
  read_key(j, "prompts", o.prompts);
  read_key(j, "skills", o.skills);
  read_key(j, "arch", o.arch);
  read_key(j, "precision", o.precision);
  read_key(j, "gpu", o.gpu);
  read_key(j, "no_shell", o.no_shell);
  read_key(j, "without_gpu", o.without_gpu);
  for (auto [key, into] : {std::pair{"atol", &o.overrides.atol}, {"rtol", &o.overrides.rtol}})
    if (auto it = j.find(key); it != j.end() && !it->is_null()) *into = it->get<double>();
}

OptimizeRunOptions load_optimize_options(const std::filesystem::path& path) {
  const auto j = parse_json_input<nlohmann::json>(read_text_file(path), path.string());
  try {
    return j.get<OptimizeRunOptions>();
  } catch (const nlohmann::json::exception& e) {
    throw InputError(fmt::format("{}: not kagent optimize options ({})", path.string(), e.what()));
  } catch (const InputError& e) {
    throw InputError(fmt::format("{}: {}", path.string(), e.what()));
  }
}

OptimizeRunOutcome run_optimize(OptimizeRunOptions a, const OptimizeRunHooks& hooks) {
  // The run folder: a fresh one, or the one being resumed (its run.json says which op and settings).
  const bool resuming = !a.resume.empty();
  fs::path out = resuming ? fs::path(a.resume) : fs::path(a.out);
  nlohmann::json run_info;
  llm::RecordedEndpoint recorded;  // resuming: the endpoint run.json names, held to the user's (config.hpp)
  if (resuming) {
    std::error_code ec;
    if (!fs::is_regular_file(out / "run.json", ec))
      throw InputError(fmt::format("--resume {}: no run.json there (not a kagent run folder)", out.string()));
    const std::string run_json = (out / "run.json").string();
    run_info = parse_json_input<nlohmann::json>(read_text_file(out / "run.json"), run_json);
    try {  // a damaged run.json (a key of the wrong type) is bad input, not an internal error
      if (a.op.empty()) a.op = run_info.at("op").get<std::string>();
      if (a.precision.empty()) a.precision = run_info.value("precision", "");
      const nlohmann::json llm = run_info.value("llm", nlohmann::json::object());
      // The model and generation settings carry on as the run started, unless a flag says otherwise.
      for (auto [flag, key] : {std::pair{&a.llm.model, "model"}, {&a.llm.tool_choice, "tool_choice"}})
        if (flag->empty() && llm.contains(key)) *flag = llm[key];
      // Where requests and the key go is not the run folder's to say: the recorded endpoint is held
      // to what the flags, environment and config file give (resolve_resumed_llm_config below).
      recorded.where = run_json;
      for (auto [into, key] : {std::pair{&recorded.provider, "provider"},
                               {&recorded.base_url, "base_url"},
                               {&recorded.api_key_env, "api_key_env"},
                               {&recorded.script, "script"}})
        if (llm.contains(key)) *into = llm[key].get<std::string>();
      // The run is scored as it started: its tolerance, unless a flag says otherwise.
      if (auto t = run_info.find("tolerance"); t != run_info.end())
        if (const std::optional<Tolerance> tol = recorded_tolerance(*t)) {
          if (!a.overrides.atol) a.overrides.atol = tol->atol;
          if (!a.overrides.rtol) a.overrides.rtol = tol->rtol;
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
  if (out.empty()) out = fs::path("runs") / fmt::format("{}-{}", run_folder_name(op.name), timestamp());
  std::error_code ec;
  if (!resuming && fs::exists(out / "transcript.jsonl", ec))
    throw InputError(
        fmt::format("--out {}: that folder already holds a run; continue it with --resume {} or choose "
                    "another --out",
                    out.string(), out.string()));
  // A file where the folder would go is the user's mistake (exit 2), not a filesystem failure.
  if (fs::exists(out, ec) && !fs::is_directory(out, ec))
    throw InputError(
        fmt::format("--out {}: that is a file; the run needs a folder there (a new or an empty one)", out.string()));
  fs::create_directories(out / "workspace", ec);
  if (ec)
    throw InputError(
        fmt::format("--out {}: cannot make the run folder ({}); choose another --out", out.string(), ec.message()));
  if (!a.llm.script.empty()) a.llm.script = fs::absolute(a.llm.script).string();
  llm::LlmConfig llm_config =
      resuming ? llm::resolve_resumed_llm_config(a.llm, op.llm, recorded) : llm::resolve_llm_config(a.llm, op.llm);
  auto provider = llm::make_provider(llm_config);

  AgentOptions opt;
  opt.max_turns = a.turns > 0 ? a.turns : op.budget.turns;
  opt.max_minutes = a.minutes > 0 ? a.minutes : op.budget.minutes;
  opt.max_tokens = a.max_tokens > 0 ? a.max_tokens : op.budget.tokens;
  opt.tool_choice = llm_config.tool_choice;
  opt.max_tool_calls = llm_config.max_tool_calls;
  // The model's window: the user's, else the server's (asked once, briefly), else the default.
  const llm::ContextWindow window = llm::find_context_window(llm_config);
  opt.context_tokens = window.tokens;
  opt.context_source = window.source;

  // The GPU side is optional: without one, compile still works and evaluations say why not.
  auto cache = std::make_shared<CompileCache>(CompileCache::default_dir());
  Compiler compiler(find_cuda_paths(), cache);
  model_tools::KernelToolContext ktx;
  ktx.op = op;
  ktx.compiler = &compiler;
  EvalOptions eo;
  eo.gpu = a.gpu;
  eo.arch = a.arch;
  auto evaluator = std::make_unique<Evaluator>(eo, cache);  // finds the GPU on first use
  ProblemFacts facts;
  try {
    // Resuming: the task was written when the run started; nothing to measure for it.
    facts = problem_facts(*evaluator, op, a.gpu, !resuming);
    ktx.arch = evaluator->arch();
  } catch (const EnvError& e) {
    // Before the first request: a run whose candidates cannot be evaluated spends tokens for nothing.
    if (!a.without_gpu)
      throw EnvError(
          fmt::format("{}; kagent optimize evaluates candidates on a GPU (--without-gpu runs the model "
                      "with compile-only tools)",
                      e.what()));
    ktx.no_gpu_reason = e.what();
    facts = facts_without_gpu(op, e.what());
    ktx.arch = evaluator->arch();  // --arch, the GPU's, or the compile-only default
    evaluator.reset();             // the tools say evaluations are unavailable, and why
  }
  ktx.op = facts.with_signature;
  if (evaluator)
    ktx.evaluate = [ev = evaluator.get(), &ktx](const Candidate& c, EvalMode mode,
                                                std::optional<model_tools::Deadline> d) {
      ev->set_deadline(d);
      return ev->evaluate(ktx.op, c, mode);
    };

  model_tools::Workspace ws(out / "workspace");
  if (!resuming && op.start) write_file_atomic(ws.root() / op.start->filename(), read_text_file(*op.start));
  std::optional<model_tools::ShellSandbox> sandbox;
  if (!a.no_shell) sandbox = model_tools::probe_shell_sandbox();
  EpisodeTools episode = make_episode_tools(ws, ktx, sandbox);
  model_tools::ToolSet& tools = episode.tools;
  check_tool_choice_names_a_tool(llm_config, tools);

  Transcript transcript(out / "transcript.jsonl");
  RunRecord record(out, transcript);
  ktx.on_evaluated = [&](const std::string& path, const std::string& source, const EvalReport& r) {
    record.evaluated(path, source, r);
  };

  RunState state;
  if (resuming) {
    auto events = Transcript::read(out / "transcript.jsonl");
    try {  // a damaged transcript (an event of the wrong shape) is bad input, not an internal error
      for (const auto& e : parse_events(events))
        if (const auto* stop = std::get_if<StopEvent>(&e); stop && stop->reason == "finish")
          throw InputError(fmt::format("--resume {}: that run already finished (see result.json)", out.string()));
      state = RunState::from_transcript(events);
      record.restore(events);
    } catch (const nlohmann::json::exception& e) {
      throw InputError(fmt::format("{}: not a kagent transcript ({})", (out / "transcript.jsonl").string(), e.what()));
    }
    transcript.write(ResumeEvent{kTranscriptVersion, state.turns, llm_config.describe()});
  } else {
    auto opening = episode_opening(op, facts, a.gpu, opt, episode, a.prompts, a.skills);
    run_info = {{"op", fs::absolute(a.op).string()},
                {"precision", std::string(precision_name(op.precision))},
                {"llm",
                 {{"provider", std::string(llm::provider_name(llm_config.provider))},
                  {"base_url", llm_config.base_url},
                  {"model", llm_config.model},
                  {"api_key_env", llm_config.api_key_source.empty() ? "" : llm_config.api_key_source.substr(1)},
                  {"script", llm_config.script},
                  {"tool_choice", llm_config.tool_choice}}},
                {"tolerance", op.tolerance},
                {"started", timestamp()}};
    write_file_atomic(out / "run.json", run_info.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n");
    transcript.write(StartEvent{kTranscriptVersion, op.name, llm_config.describe(), opt.max_turns, opt.max_minutes,
                                opt.max_tokens, ktx.no_gpu_reason.empty() ? "available" : ktx.no_gpu_reason});
    for (const auto& m : opening) {
      transcript.write(MessageEvent{m, std::nullopt, std::nullopt});
      state.messages.push_back(m);
    }
  }
  if (hooks.on_start)
    hooks.on_start({op.name, out, llm_config.describe(), ktx.no_gpu_reason,
                    fmt::format("{} tokens ({}{})", window.tokens, window.source,
                                window.probe_note.empty() ? "" : ": " + window.probe_note)});

  llm::cancel_flag().store(false);
  auto previous = std::signal(SIGINT, on_sigint);
  Agent ag(*provider, tools, transcript, record, opt, hooks.on_turn);
  RunResult res;
  try {
    res = ag.run(std::move(state));
  } catch (...) {
    std::signal(SIGINT, previous);
    throw;
  }
  std::signal(SIGINT, previous);

  ResultFile file;
  file.op = op.name;
  file.stop_reason = res.stop_reason;
  file.turns = res.turns;
  file.requests = res.requests;
  file.input_tokens = res.usage.input_tokens;
  file.output_tokens = res.usage.output_tokens;
  file.tokens_estimated = res.usage.estimated;
  file.wall_s = res.wall_s;
  file.evaluations = record.evaluations();
  file.final_path = ktx.finished_path;
  file.summary = ktx.finish_summary;
  file.llm = llm_config.describe();
  file.precision = std::string(precision_name(op.precision));
  file.tolerance = op.tolerance;
  file.best = res.best;
  file.best_by_turn = record.best_by_turn();
  const nlohmann::json result = file;
  // The model's summary and paths are its text: a stray byte must not lose the run's result.
  write_file_atomic(out / "result.json", result.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n");
  return {out, res, record.evaluations(), std::move(result)};
}

}  // namespace kagent::agent
