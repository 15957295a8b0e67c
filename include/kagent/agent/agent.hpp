#pragma once
// The ReAct loop (mini-swe-agent style: readable in one sitting, everything else pluggable). Each
// turn: one request to the model; every tool call it makes is run (up to max_tool_calls; the rest
// are answered with an error result) and its result appended; the run stops when a tool's result
// ends it (ToolResult::ends_run: `finish`), on the budget (turns, minutes, tokens; the minutes cut
// a request in flight too), after too many malformed tool calls in a row (each is answered with
// the error, so the model can correct itself), or after too many empty replies in a row (no text,
// no tool call: each is answered with the exact next step), or when the server refuses a request as
// over its context window even after the conversation was compacted harder (agent_context.hpp;
// an opening that cannot fit at all is InputError before the first request). Everything that enters the
// conversation is made valid UTF-8 first (invalid bytes become U+FFFD): tool results, the model's
// replies, the opening messages. Everything goes to the transcript as it happens
// (transcript_events.hpp). optimize_run.hpp composes a run around it.
#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "kagent/agent/agent_context.hpp"
#include "kagent/agent/run_record.hpp"
#include "kagent/agent/transcript.hpp"
#include "kagent/llm/provider.hpp"
#include "kagent/model_tools/tool.hpp"

namespace kagent::agent {

struct AgentOptions {
  int max_turns = 40;
  double max_minutes = 60;
  int64_t max_tokens = 0;              // input + output over the run; 0: no limit
  int reply_tokens = 8192;             // max_tokens of each request
  std::string tool_choice = "auto";    // each request's (llm/tool_choice.hpp): auto, required or a tool's name
  int max_malformed = 3;               // consecutive malformed tool calls before giving up
  int max_empty = 3;                   // consecutive empty replies (no text, no tool call) before giving up
  int max_tool_calls = 32;             // tool calls of one reply that are run; the rest get an error result
  size_t tool_output_cap = 24 * 1024;  // bytes of one tool result the model sees (head + tail)
  // The model's context window in tokens (llm/context_window.hpp; 0: none known) and where it came
  // from: each request is compacted to fit it with room for the reply (agent_context.hpp), one
  // tool result takes at most a quarter of it, and an opening that cannot fit is refused before
  // the first request.
  int64_t context_tokens = 0;
  std::string context_source;
  size_t context_chars = 0;  // a bound on a request's bytes whatever the window (0: none)
};

// One line of progress per turn, for the terminal.
struct TurnStatus {
  int turn = 0, max_turns = 0;
  std::string tools;  // the tools called this turn ("evaluate softmax.cu")
  std::optional<int> last_tier;
  std::optional<CandidateScore> best;
  llm::Usage usage;  // so far
};

struct RunResult {
  // "finish" (a tool's result ended the run), "turn budget", "time budget", "token budget",
  // "3 malformed tool calls in a row", "3 empty replies in a row", "context window full" (the
  // server refused a request as too long again after kagent compacted it and asked once more)
  std::string stop_reason;
  int turns = 0;
  int requests = 0;
  llm::Usage usage;
  double wall_s = 0;
  std::optional<std::string> final_path;  // named by finish
  std::optional<CandidateScore> best;
};

// What the loop resumes from: the conversation so far and the counters.
struct RunState {
  std::vector<llm::Message> messages;
  int turns = 0;
  int requests = 0;
  llm::Usage usage;
  double wall_s = 0;  // of earlier sessions of this run
  // Restores the state from a transcript's events.
  static RunState from_transcript(const std::vector<nlohmann::json>& events);
};

class Agent {
 public:
  Agent(llm::Provider& provider, model_tools::ToolSet& tools, Transcript& transcript, RunRecord& record,
        AgentOptions options, std::function<void(const TurnStatus&)> on_turn = {});

  // Runs from `state` (a fresh run: the system and task messages, already in the transcript).
  RunResult run(RunState state);

 private:
  llm::Message run_tool_call(const llm::ToolCall& call, bool& malformed, bool& finished, std::string& summary);
  llm::Message not_run(const llm::ToolCall& call, size_t calls_in_reply);
  // One request, compacted to the window; after the server's refusal as too long, compacted
  // harder and asked once more. Returns false when the run stops (stop_reason says why).
  bool ask(std::vector<llm::Message>& messages, llm::ChatRequest& rq, llm::ChatResponse& reply,
           std::string& stop_reason, int turn);
  // Why the opening alone cannot fit, counted as `b` counts, and what to do.
  std::string opening_does_not_fit(const ContextBudget& b, bool server_counted, size_t opening_bytes,
                                   const std::string& server_said) const;

  llm::Provider& provider_;
  model_tools::ToolSet& tools_;
  Transcript& transcript_;
  RunRecord& record_;
  AgentOptions opt_;
  std::function<void(const TurnStatus&)> on_turn_;
  std::optional<int> last_tier_;
  std::optional<std::chrono::steady_clock::time_point> deadline_;  // the time budget's end (run())
  ContextBudget budget_;
  std::string window_source_;  // where budget_'s window came from
  size_t tool_bytes_ = 0;      // of the tool schemas every request carries
};

}  // namespace kagent::agent
