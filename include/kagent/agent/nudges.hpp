#pragma once
// What the loop tells the model when a reply did no work. A small model that answers with nothing
// (seen with a 270M model behind llama-cpp-python) does not recover from a vague "continue": the
// nudge names the next concrete step and the tools to take it with.
#include <optional>
#include <string>
#include <vector>

namespace kagent::agent {

// After a reply with text but no tool call.
std::string text_only_nudge();

// After a reply whose text held tool calls that could not be read (llm/tool_call_text.hpp's
// errors): each error, and the form to write a call in.
std::string unreadable_calls_nudge(const std::vector<std::string>& errors);

// After a reply with neither text nor a tool call. `tools`: the names offered; `best_path`: the
// workspace path of the best candidate so far (finish with it); `in_a_row`/`limit`: the empty
// replies so far and how many end the run.
std::string empty_reply_nudge(const std::vector<std::string>& tools, const std::optional<std::string>& best_path,
                              int in_a_row, int limit);

// Whether a reply did nothing at all: no tool call and no text but whitespace.
bool is_empty_reply(const std::string& content, size_t tool_calls);

}  // namespace kagent::agent
