#include "kagent/model_tools/tool_call.hpp"

#include <chrono>

#include <fmt/format.h>

#include "kagent/common/utf8.hpp"

namespace kagent::model_tools {

CallOutcome run_tool_call(ToolSet& tools, const llm::ToolCall& call, std::optional<Deadline> deadline, size_t cap) {
  CallOutcome o;
  llm::Message& out = o.message;
  out.role = llm::Role::tool;
  out.tool_call_id = call.id;
  out.tool_name = call.name;
  Tool* tool = nullptr;
  std::string names;
  for (auto& t : tools) {
    const std::string name = t->spec().name;
    if (name == call.name) tool = t.get();
    names += (names.empty() ? "" : ", ") + name;
  }
  if (tool == nullptr) {
    o.malformed = true;
    out.is_error = true;
    out.content = fmt::format("error: there is no tool '{}'. The tools are: {}.", call.name, names);
  } else if (!call.arguments_error.empty() || !call.arguments.is_object()) {
    o.malformed = true;
    out.is_error = true;
    out.content = fmt::format(
        "error: the arguments of this {} call are not a JSON object ({}). Call it again with "
        "arguments matching its schema.",
        call.name, call.arguments_error.empty() ? "got " + call.arguments.dump() : call.arguments_error);
  } else if (deadline && std::chrono::steady_clock::now() >= *deadline) {
    // The time budget ran out: the remaining calls are answered, not run.
    out.is_error = true;
    out.content = fmt::format("error: not run: the run's time budget ran out before this {} call", call.name);
  } else {
    try {
      tool->set_deadline(deadline);
      ToolResult r = tool->run(call.arguments);
      // A file or a program's output may hold any bytes (`cat` of a binary): valid UTF-8 before
      // the cut, which keeps it so and then counts what the model reads.
      const std::string text = valid_utf8(r.text);
      out.content = cut_middle(text, cap);
      o.truncated = out.content.size() != text.size();
      out.is_error = r.is_error;
      o.record = std::move(r.record);
      o.finished = r.ends_run && !r.is_error;
      o.tier = r.tier;
    } catch (const ToolError& e) {
      out.is_error = true;
      out.content = fmt::format("error: {}", e.what());
    }
  }
  llm::make_valid_utf8_message(out);  // the error texts quote the model's names and paths
  return o;
}

}  // namespace kagent::model_tools
