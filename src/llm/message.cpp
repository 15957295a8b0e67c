#include "kagent/llm/message.hpp"

#include "kagent/common/utf8.hpp"

namespace kagent::llm {

std::string_view role_name(Role r) {
  switch (r) {
    case Role::system:
      return "system";
    case Role::user:
      return "user";
    case Role::assistant:
      return "assistant";
    case Role::tool:
      return "tool";
  }
  return "user";
}

}  // namespace kagent::llm

namespace kagent::llm {

bool make_valid_utf8_message(Message& m) {
  bool changed = false;
  for (std::string* s : {&m.content, &m.tool_call_id, &m.tool_name}) changed = make_valid_utf8(*s) || changed;
  for (ToolCall& c : m.tool_calls)
    for (std::string* s : {&c.id, &c.name, &c.raw_arguments, &c.arguments_error})
      changed = make_valid_utf8(*s) || changed;
  return changed;
}

// A last guard: a string held in a json value that is not UTF-8 would throw when dumped
// (nlohmann's type_error 316), wherever that happens.
void to_json(nlohmann::json& j, const ToolCall& c) {
  j = {{"id", valid_utf8(c.id)},
       {"name", valid_utf8(c.name)},
       {"arguments", c.arguments},
       {"raw_arguments", valid_utf8(c.raw_arguments)}};
  if (!c.arguments_error.empty()) j["arguments_error"] = valid_utf8(c.arguments_error);
}

void from_json(const nlohmann::json& j, ToolCall& c) {
  c.id = j.value("id", "");
  c.name = j.value("name", "");
  c.arguments = j.value("arguments", nlohmann::json());
  c.raw_arguments = j.value("raw_arguments", "");
  c.arguments_error = j.value("arguments_error", "");
}

void to_json(nlohmann::json& j, const Message& m) {
  j = {{"role", role_name(m.role)}, {"content", valid_utf8(m.content)}};
  if (!m.tool_calls.empty()) j["tool_calls"] = m.tool_calls;
  if (m.role == Role::tool) {
    j["tool_call_id"] = valid_utf8(m.tool_call_id);
    j["tool_name"] = valid_utf8(m.tool_name);
    if (m.is_error) j["is_error"] = true;
  }
}

void from_json(const nlohmann::json& j, Message& m) {
  const std::string role = j.value("role", "user");
  m.role = role == "system"      ? Role::system
           : role == "assistant" ? Role::assistant
           : role == "tool"      ? Role::tool
                                 : Role::user;
  m.content = j.value("content", "");
  m.tool_calls = j.value("tool_calls", std::vector<ToolCall>{});
  m.tool_call_id = j.value("tool_call_id", "");
  m.tool_name = j.value("tool_name", "");
  m.is_error = j.value("is_error", false);
}

}  // namespace kagent::llm
