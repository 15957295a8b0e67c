#include "kagent/agent/nudges.hpp"

#include <algorithm>

#include <fmt/format.h>

namespace kagent::agent {

namespace {

bool offered(const std::vector<std::string>& tools, const char* name) {
  return std::find(tools.begin(), tools.end(), name) != tools.end();
}

// The one next step, with the exact arguments to send; only tools that are offered are named.
std::string next_step(const std::vector<std::string>& tools, const std::optional<std::string>& best_path) {
  if (best_path && offered(tools, "finish"))
    return fmt::format(
        "To end the run with your best candidate, call finish with {{\"path\": \"{}\"}}; to improve it, edit it "
        "and call evaluate with its path.",
        *best_path);
  if (offered(tools, "write_file") && offered(tools, "evaluate"))
    return "Write a candidate with write_file, e.g. {\"path\": \"kernel.cu\", \"content\": \"<the CUDA source with "
           "its /*kagent ...*/ launch plan>\"}, then call evaluate with {\"path\": \"kernel.cu\"}.";
  return "Call one of the tools by its name.";
}

}  // namespace

std::string text_only_nudge() {
  return "Continue with a tool call; call finish with your best candidate when you are done.";
}

std::string unreadable_calls_nudge(const std::vector<std::string>& errors) {
  return fmt::format(
      "These tool calls in your reply could not be read, so they were not run: {}. Write each call as "
      "<tool_call>{{\"name\": \"TOOL\", \"arguments\": {{...}}}}</tool_call> with the arguments a JSON object.",
      fmt::join(errors, "; "));
}

std::string empty_reply_nudge(const std::vector<std::string>& tools, const std::optional<std::string>& best_path,
                              int in_a_row, int limit) {
  return fmt::format(
      "Your reply was empty: no text and no tool call ({} of {} in a row; at {} the run stops). Reply with a tool "
      "call now. {} The tools are: {}.",
      in_a_row, limit, limit, next_step(tools, best_path), fmt::join(tools, ", "));
}

bool is_empty_reply(const std::string& content, size_t tool_calls) {
  return tool_calls == 0 && content.find_first_not_of(" \t\r\n") == std::string::npos;
}

}  // namespace kagent::agent
