#pragma once
// Whether the model must call a tool: kagent's one spelling ("auto", "required", or a tool's name)
// and its translation to each wire format. Some servers support only part of it (llama-cpp-python
// answers "required" with HTTP 500), so an HTTP error while a choice other than auto was sent
// names the choice as the likely cause.
#include <string>

#include <nlohmann/json.hpp>

namespace kagent::llm {

// "auto" (the model decides; also what "" means), "required" (some tool), or a tool's name
// (letters, digits, '_' and '-', at most 64: the names the APIs accept). Throws InputError naming
// `origin` ("flag", "env $KAGENT_TOOL_CHOICE", ...) for anything else, "none" included: the agent
// works only through tools.
void check_tool_choice(const std::string& value, const std::string& origin);

bool is_auto_tool_choice(const std::string& value);  // "" or "auto"

// OpenAI Chat Completions: "auto", "required", {"type": "function", "function": {"name": ...}}.
nlohmann::json openai_tool_choice(const std::string& value);
// Anthropic Messages: {"type": "auto"}, {"type": "any"}, {"type": "tool", "name": ...}.
nlohmann::json anthropic_tool_choice(const std::string& value);

// For an HTTP error answering a request with a tool choice other than auto: the sentence that
// names it as the likely cause and how to do without ("" for auto). `origin` as above ("" unknown).
std::string tool_choice_hint(const std::string& value, const std::string& origin);

}  // namespace kagent::llm
