#pragma once
// One optimize run, composed in one place: the run folder (fresh, or the one being resumed), the
// LLM provider, the compiler and evaluator, the model's tools, the task text and the Agent, then
// the loop and result.json. `kagent optimize` calls run_optimize with options from its flags;
// `kagent bench --agent` writes the same options as one JSON document (to_json) for each child
// `kagent optimize --options FILE` it starts (a child per problem, so a crash or hang of one run
// does not lose the batch), which reads them back (from_json) and calls run_optimize.
#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>

#include <nlohmann/json.hpp>

#include "kagent/agent/agent.hpp"
#include "kagent/llm/config.hpp"
#include "kagent/spec/op_overrides.hpp"

namespace kagent::agent {

struct OptimizeRunOptions {
  std::string op;     // op.json or KernelBench .py (optional with resume: the run's)
  llm::LlmFlags llm;  // provider, base_url, model, api_key_env, script, tool_choice, reply limits, context
                      // window, allow_op_endpoint
  int turns = 0;      // budgets; 0: the op's
  double minutes = 0;
  int64_t max_tokens = 0;
  std::string out;        // the run folder (empty: runs/<op>-<timestamp>)
  std::string resume;     // continue the run in this folder
  std::string prompts;    // folder with system.md and task.md (empty: kagent's prompts/)
  std::string skills;     // folder of skills (empty: kagent's skills/)
  std::string arch;       // compile target (empty: the GPU's)
  std::string precision;  // fp32, tf32, fp16, bf16 (empty: the op's, or, resuming, the run's)
  int gpu = 0;
  bool no_shell = false;
  // Run even without a usable GPU: the model compiles but cannot evaluate (its tools say why). Off,
  // a run without one fails before its first request (EnvError, exit 3).
  bool without_gpu = false;
  OpOverrides overrides;  // --atol/--rtol over the op's tolerance
};

// Every key is written (the document says all the run was given); from_json takes a missing key
// as its default and refuses an unknown one (InputError naming it), so a misspelt setting is not
// silently ignored. Doubles are written so they read back exactly.
void to_json(nlohmann::json& j, const OptimizeRunOptions& o);
void from_json(const nlohmann::json& j, OptimizeRunOptions& o);
// Reads an options file (InputError naming the file when it is not one).
OptimizeRunOptions load_optimize_options(const std::filesystem::path& path);

// What the run is, once composed (the CLI prints it before the first turn).
struct OptimizeRunStart {
  std::string op;  // the op's name
  std::filesystem::path out;
  std::string llm;            // LlmConfig::describe()
  std::string no_gpu_reason;  // empty: evaluations are available
  std::string context;        // the model's context window and where it came from
};

struct OptimizeRunHooks {
  std::function<void(const OptimizeRunStart&)> on_start;
  std::function<void(const TurnStatus&)> on_turn;
};

struct OptimizeRunOutcome {
  std::filesystem::path out;
  RunResult result;
  int evaluations = 0;
  nlohmann::json result_json;  // what result.json holds
};

// Composes and runs the loop; SIGINT during the loop stops it cleanly (the transcript stays
// resumable). Throws InputError for bad input (exit 2), EnvError for the environment (exit 3).
OptimizeRunOutcome run_optimize(OptimizeRunOptions options, const OptimizeRunHooks& hooks = {});

}  // namespace kagent::agent
