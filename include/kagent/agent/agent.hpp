#pragma once
// The ReAct loop (mini-swe-agent style: readable in one sitting, everything else pluggable). Each
// turn: one request to the model; every tool call it makes is run (up to max_tool_calls; the rest
// are answered with an error result) and its result appended; the run stops when a tool's result
// ends it (ToolResult::ends_run: `finish`), on the budget (turns, minutes, tokens; the minutes cut
// a request in flight too), after too many malformed tool calls in a row (each is answered with
// the error, so the model can correct itself), or after too many empty replies in a row (no text,
// no tool call: each is answered with the exact next step). Everything that enters the
// conversation is made valid UTF-8 first (invalid bytes become U+FFFD): tool results, the model's
// replies, the opening messages. Everything goes to the transcript as it happens
// (transcript_events.hpp). optimize_run.hpp composes a run around it.
#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "kagent/agent/run_record.hpp"
#include "kagent/agent/transcript.hpp"
#include "kagent/llm/provider.hpp"
#include "kagent/tools/tool.hpp"

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
  size_t context_chars = 360 * 1024;   // beyond this, old tool outputs become one-line summaries
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
  // "3 malformed tool calls in a row", "3 empty replies in a row"
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
  Agent(llm::Provider& provider, tools::ToolSet& tools, Transcript& transcript, RunRecord& record, AgentOptions options,
        std::function<void(const TurnStatus&)> on_turn = {});

  // Runs from `state` (a fresh run: the system and task messages, already in the transcript).
  RunResult run(RunState state);

 private:
  llm::Message run_tool_call(const llm::ToolCall& call, bool& malformed, bool& finished, std::string& summary);
  llm::Message not_run(const llm::ToolCall& call, size_t calls_in_reply);
  void compact(std::vector<llm::Message>& messages) const;

  llm::Provider& provider_;
  tools::ToolSet& tools_;
  Transcript& transcript_;
  RunRecord& record_;
  AgentOptions opt_;
  std::function<void(const TurnStatus&)> on_turn_;
  std::optional<int> last_tier_;
  std::optional<std::chrono::steady_clock::time_point> deadline_;  // the time budget's end (run())
};

}  // namespace kagent::agent
