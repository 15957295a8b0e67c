#pragma once
// What the session routes of `kagent serve` accept (docs/environment.md), read by functions that
// need neither the network nor a GPU (the fuzz target tests/fuzz/fuzz_session_step.cpp drives the
// step's). Refusals are RequestError (request.hpp): the status, the field, what was expected.
//
// POST /v1/sessions:
//   {"problem": "level1/19", "precision"?, "atol"?, "rtol"?, "tolerance"?, "trials"?, "timing"?,
//    "timeout_s"?, "measure"?: {...} (as /v1/evaluate's),
//    "limits"?: {"steps", "wall_s", "call_s", "observation_bytes", "evaluations", "workspace_mb"},
//    "reward"?: "tier" | "best_tier" | "log_speedup", "shell"?: bool}
// POST /v1/sessions/{id}/step, one of:
//   {"tool_call": {"id"?, "name", "arguments"}}     arguments: an object, or a JSON string holding one
//   {"tool_calls": [{...}, ...]}                    one assistant reply's calls, run in order
//   {"text": "..."}                                 an assistant reply; kagent reads its calls
//                                                   (llm/tool_call_text.hpp: <tool_call> blocks, JSON)
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "kagent/judge/backend.hpp"
#include "kagent/llm/message.hpp"
#include "kagent/serve/request.hpp"

namespace kagent::serve {

// An episode's bounds. The defaults are CUDA Agent's training setting (150 turns); the service's
// flags set the most a session may ask for (SessionBounds).
struct SessionLimits {
  int steps = 150;                             // step requests (the model's replies)
  double wall_s = 4 * 3600;                    // from open to the last step
  double call_s = 600;                         // one tool call (a shell command, an evaluation with its wait)
  size_t observation_bytes = 24 * 1024;        // of one call's text (head and tail kept, as kagent optimize)
  int evaluations = 64;                        // evaluate and profile calls (finish's evaluation not counted)
  size_t workspace_bytes = size_t{256} << 20;  // the workspace's files
};

// How the episode's reward is made from its evaluations (docs/environment.md):
//   tier         the final candidate's tier (finish's, or the best evaluated one when a limit ends
//                the episode): -1, 1, 2, 3; -1 when there is none
//   best_tier    the highest tier any evaluation of the episode reached (-1 when none)
//   log_speedup  ln(eager / candidate time) of the final candidate when it is correct, else -1
enum class RewardRule { tier, best_tier, log_speedup };
const char* reward_rule_name(RewardRule r);

struct OpenSessionRequest {
  std::string problem;              // as given (resolve_problem turns it into a file)
  judge::CandidateRequest judging;  // precision, tolerance, trials, timing, timeout, measure
  SessionLimits limits;
  RewardRule reward = RewardRule::tier;
  bool shell = true;  // the shell tool (off: the episode has the file and kernel tools only)
  std::string kind;   // the one candidate kind the episode's tools take ("" any: as kagent optimize)
};

// The candidate kinds an episode may be restricted to: those whose format the prompts and the skill
// teach (a model told of launch plans only cannot be asked for another format).
inline constexpr std::string_view kEpisodeKinds[] = {"plan"};

// Throws RequestError: 413 for a body over limits.max_body_bytes; 400 naming the field otherwise.
// A limit above `most`'s is refused naming it and the most.
OpenSessionRequest parse_open_session(std::string_view body, const RequestLimits& limits, const SessionLimits& most);

struct StepRequest {
  std::vector<llm::ToolCall> calls;  // completed (llm::complete_tool_call): a bad argument text is arguments_error
  // {"text"}: the reply's words without its calls, and the blocks that held no readable call.
  bool from_text = false;
  std::string text;
  std::vector<std::string> unreadable;
};

// Most tool calls one step may carry (400 beyond); the agent loop's max_tool_calls is the same.
constexpr size_t kMaxStepCalls = 32;

// Throws RequestError: 413 over the body limit; 400 for a body that is not one of the three forms
// or a call without a string name. Arguments that are not an object are not refused here: the
// call's observation says so to the model, as the agent loop does.
StepRequest parse_step(std::string_view body, const RequestLimits& limits);

}  // namespace kagent::serve
