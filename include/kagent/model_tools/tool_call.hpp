#pragma once
// One tool call of the model, run: the one place that finds the tool, refuses a malformed call,
// runs it against the deadline and cuts what it says to what the model may read. `kagent
// optimize`'s loop (agent/agent.cpp) and the sessions of `kagent serve` (serve/sessions.cpp) both
// run calls here, so a model reads the same text for the same call in either.
#include <cstddef>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "kagent/llm/message.hpp"
#include "kagent/model_tools/tool.hpp"

namespace kagent::model_tools {

struct CallOutcome {
  llm::Message message;     // role tool, with the call's id and name: what the model reads
  nlohmann::json record;    // the tool's structured result (ToolResult::record), null when it did not run
  bool malformed = false;   // no such tool, or arguments that are not a JSON object
  bool finished = false;    // the tool ended the run (finish)
  bool truncated = false;   // the text was cut to the cap
  std::optional<int> tier;  // the reward tier of the evaluation it ran
};

// Runs `call` with the tools; the model's mistakes (an unknown tool, arguments that are not an
// object, a ToolError) and a call made after the deadline come back as error results. The text is
// made valid UTF-8, then cut to `cap` bytes (cut_middle). Exceptions other than ToolError (kagent's
// own failures) propagate.
CallOutcome run_tool_call(ToolSet& tools, const llm::ToolCall& call, std::optional<Deadline> deadline, size_t cap);

}  // namespace kagent::model_tools
