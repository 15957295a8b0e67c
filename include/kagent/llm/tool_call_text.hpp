#pragma once
// Tool calls as text. One place finishes a call whose arguments came as raw JSON text (providers
// stream them so). The other reads the calls written into an assistant reply's text, for a model
// served without native tool calling, such as a trainer that samples the tokens itself and hands
// kagent the decoded reply. The forms read:
//   - Qwen's and Hermes' chat templates: one or more
//       <tool_call>{"name": "evaluate", "arguments": {"path": "k.cu"}}</tool_call>
//     (a last block the reply ends in before its closing tag counts: generation often stops at
//     "</tool_call>");
//   - a reply that is only a JSON object {"name": ..., "arguments": ...} or an array of them,
//     bare or in a ```json fence.
// "parameters" is read where "arguments" is absent (Llama 3's form), and arguments may be a JSON
// string that holds the object. A malformed call is never an exception: it becomes a ToolCall with
// arguments_error set (or an entry of `errors` when not even its name can be read), which the agent
// loop hands back to the model as an error result.
#include <string>
#include <string_view>
#include <vector>

#include "kagent/llm/message.hpp"

namespace kagent::llm {

// Gives the call an id when it has none ("call_kagent_N") and fills `arguments` from
// `raw_arguments`: blank is {}, a JSON object is itself, a JSON string holding an object is that
// object; anything else leaves `arguments` null and says why in `arguments_error`.
void complete_tool_call(ToolCall& call);

struct TextToolCalls {
  std::string text;             // the reply without the calls (trimmed)
  std::vector<ToolCall> calls;  // in the reply's order, each completed (complete_tool_call)
  // Blocks that held no readable call, in words for the model: "tool call 2: no \"name\"".
  std::vector<std::string> errors;
};

TextToolCalls tool_calls_in_text(std::string_view reply);

}  // namespace kagent::llm
