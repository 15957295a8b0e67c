#include "kagent/llm/tool_choice.hpp"

#include <fmt/format.h>

#include "kagent/common/error.hpp"

namespace kagent::llm {

namespace {

bool is_tool_name(const std::string& s) {
  if (s.empty() || s.size() > 64) return false;
  for (char c : s)
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-'))
      return false;
  return true;
}

}  // namespace

bool is_auto_tool_choice(const std::string& value) {
  return value.empty() || value == "auto";
}

void check_tool_choice(const std::string& value, const std::string& origin) {
  if (value == "none")
    throw InputError(fmt::format(
        "tool_choice 'none' (from {}): the agent works only through tool calls; expected auto, required or a "
        "tool's name",
        origin));
  if (value == "auto" || value == "required" || is_tool_name(value)) return;
  throw InputError(fmt::format(
      "tool_choice '{}' (from {}): expected auto, required or a tool's name (letters, digits, '_' and '-', at most "
      "64)",
      value, origin));
}

nlohmann::json openai_tool_choice(const std::string& value) {
  if (is_auto_tool_choice(value)) return "auto";
  if (value == "required") return "required";
  return {{"type", "function"}, {"function", {{"name", value}}}};
}

nlohmann::json anthropic_tool_choice(const std::string& value) {
  if (is_auto_tool_choice(value)) return {{"type", "auto"}};
  if (value == "required") return {{"type", "any"}};
  return {{"type", "tool"}, {"name", value}};
}

std::string tool_choice_hint(const std::string& value, const std::string& origin) {
  if (is_auto_tool_choice(value)) return "";
  return fmt::format(
      "the request set tool_choice '{}'{}, which this server may not support: the likely cause; try tool_choice "
      "auto (--tool-choice auto or $KAGENT_TOOL_CHOICE=auto)",
      value, origin.empty() ? "" : fmt::format(" (from {})", origin));
}

}  // namespace kagent::llm
