// The script provider: a JSONL file of assistant turns played back in order, whatever the
// request says. It lets the agent loop, the tools and the transcripts be tested and demonstrated
// without a model or a network. Every line is validated up front, so a typo fails the run before
// the first turn instead of halfway through it.
#include <algorithm>

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "kagent/common/error.hpp"
#include "kagent/common/files.hpp"
#include "kagent/common/json_parse.hpp"
#include "kagent/common/json_text.hpp"
#include "providers.hpp"

namespace kagent::llm {

namespace {

using nlohmann::json;

constexpr const char* kTurnShape =
    R"(one assistant turn per line: {"content": "...", "tool_calls": [{"name": "...", "arguments": {...}}], )"
    R"("stop_reason": "...", "usage": {"input_tokens": N, "output_tokens": N}}, every key optional)";

std::string show(const json& v) {
  return show_json(v);
}

bool is_blank(std::string_view line) {
  return line.find_first_not_of(" \t\r") == std::string_view::npos;
}

// Reads one turn; `where` is "FILE:LINE" and `turn` the 1-based turn number (for generated ids).
ChatResponse parse_turn(const std::string& where, std::string_view line, size_t turn) {
  json doc;
  try {
    doc = parse_json<json>(line);
  } catch (const JsonTextError& e) {
    const std::string at = e.path().empty() ? "" : " at " + e.path();
    throw InputError(fmt::format("{}: not valid JSON{} ({}); expected {}", where, at, e.what(), kTurnShape));
  }
  if (!doc.is_object()) throw InputError(fmt::format("{}: got {}; expected {}", where, show(doc), kTurnShape));

  ChatResponse out;
  out.message.role = Role::assistant;
  for (const auto& [key, value] : doc.items()) {
    if (key == "content") {
      if (!value.is_string())
        throw InputError(fmt::format("{}: \"content\" must be a string, got {}", where, show(value)));
      out.message.content = value.get<std::string>();
    } else if (key == "stop_reason") {
      if (!value.is_string()) {
        throw InputError(fmt::format("{}: \"stop_reason\" must be a string, got {}", where, show(value)));
      }
      out.stop_reason = value.get<std::string>();
    } else if (key == "usage") {
      if (!value.is_object()) {
        throw InputError(
            fmt::format("{}: \"usage\" must be an object {{\"input_tokens\": N, \"output_tokens\": N}}, got {}", where,
                        show(value)));
      }
      for (const auto& [ukey, count] : value.items()) {
        if (ukey != "input_tokens" && ukey != "output_tokens") {
          throw InputError(
              fmt::format("{}: unknown key \"usage.{}\"; expected input_tokens, output_tokens", where, ukey));
        }
        if (!count.is_number_integer() || count.get<int64_t>() < 0) {
          throw InputError(
              fmt::format("{}: \"usage.{}\" must be a non-negative integer, got {}", where, ukey, show(count)));
        }
        (ukey == "input_tokens" ? out.usage.input_tokens : out.usage.output_tokens) = count.get<int64_t>();
      }
    } else if (key == "tool_calls") {
      if (!value.is_array()) {
        throw InputError(
            fmt::format("{}: \"tool_calls\" must be an array of {{\"name\": ..., \"arguments\": {{...}}}}, got {}",
                        where, show(value)));
      }
      for (size_t i = 0; i < value.size(); ++i) {
        const json& c = value[i];
        std::string at = fmt::format("{}: tool_calls[{}]", where, i);
        if (!c.is_object()) {
          throw InputError(
              fmt::format("{} must be an object {{\"name\": ..., \"arguments\": {{...}}}}, got {}", at, show(c)));
        }
        ToolCall call;
        for (const auto& [ckey, cvalue] : c.items()) {
          if (ckey == "name" || ckey == "id") {
            if (!cvalue.is_string() || cvalue.get<std::string>().empty()) {
              throw InputError(fmt::format("{}.{} must be a non-empty string, got {}", at, ckey, show(cvalue)));
            }
            (ckey == "name" ? call.name : call.id) = cvalue.get<std::string>();
          } else if (ckey == "arguments") {
            if (!cvalue.is_object()) {
              throw InputError(fmt::format("{}.arguments must be a JSON object, got {}", at, show(cvalue)));
            }
            call.arguments = cvalue;
          } else {
            throw InputError(fmt::format("{}: unknown key \"{}\"; expected name, arguments, id", at, ckey));
          }
        }
        if (call.name.empty()) throw InputError(fmt::format("{}: missing \"name\" (the tool to call)", at));
        if (call.arguments.is_null()) call.arguments = json::object();
        call.raw_arguments = call.arguments.dump();
        if (call.id.empty()) call.id = fmt::format("script_{}_{}", turn, i + 1);
        out.message.tool_calls.push_back(std::move(call));
      }
    } else {
      // A misspelt key would otherwise silently turn a tool call into an empty turn.
      throw InputError(
          fmt::format("{}: unknown key \"{}\"; expected content, tool_calls, stop_reason, usage", where, key));
    }
  }
  if (out.stop_reason.empty()) out.stop_reason = out.message.tool_calls.empty() ? "end_turn" : "tool_use";
  out.latency_s = 0;
  out.attempts = 1;
  return out;
}

class ScriptProvider : public Provider {
 public:
  explicit ScriptProvider(const LlmConfig& config) : path_(config.script) {
    if (path_.empty()) throw InputError("script provider: no script file given (a JSONL file of assistant turns)");
    std::string text = read_text_file(path_);
    size_t line_no = 0;
    for (size_t start = 0; start <= text.size();) {
      size_t end = text.find('\n', start);
      if (end == std::string::npos) end = text.size();
      std::string_view line(text.data() + start, end - start);
      ++line_no;
      if (!is_blank(line)) {
        turns_.push_back(parse_turn(fmt::format("{}:{}", path_, line_no), line, turns_.size() + 1));
      }
      start = end + 1;
    }
    if (turns_.empty()) throw InputError(fmt::format("{}: no turns; expected {}", path_, kTurnShape));
  }

  ChatResponse chat(const ChatRequest& request) override {
    // A resumed run's conversation already holds the turns played before the kill: go on after them.
    size_t played = 0;
    for (const auto& m : request.messages) played += m.role == Role::assistant ? 1 : 0;
    next_ = std::max(next_, played);
    if (next_ >= turns_.size()) {
      throw EnvError(fmt::format("script {} has no more turns ({} played)", path_, turns_.size()));
    }
    return turns_[next_++];
  }

  std::string name() const override { return "script"; }

 private:
  std::string path_;
  std::vector<ChatResponse> turns_;
  size_t next_ = 0;
};

}  // namespace

std::unique_ptr<Provider> make_script_provider(const LlmConfig& config) {
  return std::make_unique<ScriptProvider>(config);
}

}  // namespace kagent::llm
