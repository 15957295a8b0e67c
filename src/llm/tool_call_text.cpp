#include "kagent/llm/tool_call_text.hpp"

#include <atomic>
#include <cstdint>
#include <utility>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "kagent/common/json_parse.hpp"
#include "kagent/common/text.hpp"
#include "kagent/common/utf8.hpp"

namespace kagent::llm {

using nlohmann::json;

namespace {

constexpr size_t kMessageChars = 200;
// A block's body may hold the closing tag itself (a file's text written through the call): the
// parse is tried up to this many closing tags on before the block is given up as malformed.
constexpr int kCloseTagsTried = 16;
constexpr std::string_view kOpen = "<tool_call>";
constexpr std::string_view kClose = "</tool_call>";

// One line of at most kMessageChars bytes, not cut inside a UTF-8 character.
std::string one_line(std::string text) {
  for (char& c : text)
    if (c == '\n' || c == '\r' || c == '\t') c = ' ';
  return cut_with_ellipsis(text, kMessageChars);
}

// The inside of a ```json (or ```) fence that is the whole of `s`; `s` itself otherwise.
std::string_view unfenced(std::string_view s) {
  s = trim(s);
  if (s.size() < 6 || s.substr(0, 3) != "```" || s.substr(s.size() - 3) != "```") return s;
  std::string_view inner = s.substr(3, s.size() - 6);
  const size_t eol = inner.find('\n');
  if (eol == std::string_view::npos) return trim(inner);
  const std::string_view tag = trim(inner.substr(0, eol));  // "json" or nothing
  if (!tag.empty() && tag != "json" && tag != "JSON") return s;
  return trim(inner.substr(eol + 1));
}

std::string error_text(const JsonTextError& e) {
  return e.byte() != std::string::npos ? fmt::format("{} (at byte {})", e.what(), e.byte() + 1)
         : e.path().empty()            ? std::string(e.what())
                                       : fmt::format("{} (at {})", e.what(), e.path());
}

std::string generated_call_id() {
  static std::atomic<uint64_t> counter{0};
  return "call_kagent_" + std::to_string(++counter);
}

// The call an object describes, or why it describes none.
bool call_of(const json& v, int n, TextToolCalls& out) {
  if (!v.is_object()) {
    out.errors.push_back(
        fmt::format("tool call {}: a JSON {}, not an object with \"name\" and \"arguments\"", n, v.type_name()));
    return false;
  }
  const json* fn = &v;
  if (!v.contains("name") && v.contains("function") && v["function"].is_object()) fn = &v["function"];  // OpenAI's
  const auto name = fn->find("name");
  if (name == fn->end() || !name->is_string() || name->get<std::string>().empty()) {
    out.errors.push_back(
        fmt::format("tool call {}: no \"name\" (a string): write "
                    "{{\"name\": \"TOOL\", \"arguments\": {{...}}}}",
                    n));
    return false;
  }
  ToolCall call;
  call.name = name->get<std::string>();
  if (const auto id = v.find("id"); id != v.end() && id->is_string()) call.id = id->get<std::string>();
  auto args = fn->find("arguments");
  if (args == fn->end()) args = fn->find("parameters");
  if (args != fn->end()) call.raw_arguments = args->is_string() ? args->get<std::string>() : args->dump();
  complete_tool_call(call);
  out.calls.push_back(std::move(call));
  return true;
}

// A <tool_call> block from `body_start`: parsed up to the first closing tag after which its text is
// valid JSON (or the reply's end). Returns where the reply goes on after the block.
size_t read_block(std::string_view reply, size_t body_start, int n, TextToolCalls& out) {
  size_t end = reply.find(kClose, body_start);
  std::string first_error;
  for (int tried = 0; tried < kCloseTagsTried; ++tried) {
    const std::string_view body =
        unfenced(reply.substr(body_start, end == std::string_view::npos ? std::string_view::npos : end - body_start));
    try {
      const json v = parse_json<json>(body);
      call_of(v, n, out);
      return end == std::string_view::npos ? reply.size() : end + kClose.size();
    } catch (const JsonTextError& e) {
      if (first_error.empty()) first_error = error_text(e);
    }
    if (end == std::string_view::npos) break;
    end = reply.find(kClose, end + kClose.size());
  }
  out.errors.push_back(one_line(fmt::format("tool call {}: not valid JSON: {}", n, first_error)));
  const size_t first_close = reply.find(kClose, body_start);
  return first_close == std::string_view::npos ? reply.size() : first_close + kClose.size();
}

}  // namespace

void complete_tool_call(ToolCall& call) {
  if (call.id.empty()) call.id = generated_call_id();
  const std::string& raw = call.raw_arguments;
  if (raw.find_first_not_of(" \t\r\n") == std::string::npos) {  // "" means no arguments
    call.arguments = json::object();
    return;
  }
  std::string reason;
  try {
    // Bounded (json_parse.hpp): the model's text, nested 10^4 deep, must not recurse off the stack.
    json parsed = parse_json<json>(raw);
    // Some servers encode the arguments twice: a JSON string that holds the JSON object.
    if (parsed.is_string()) {
      try {
        json inner = parse_json<json>(parsed.get<std::string>());
        if (inner.is_object()) parsed = std::move(inner);
      } catch (const JsonTextError&) {
      }
    }
    if (parsed.is_object()) {
      call.arguments = std::move(parsed);
      return;
    }
    reason = fmt::format("a JSON {}, not an object", parsed.type_name());
  } catch (const JsonTextError& e) {
    reason = error_text(e);
  }
  call.arguments = nullptr;
  call.arguments_error =
      one_line(fmt::format("the arguments of tool call '{}' are not valid JSON: {}", call.name, reason));
}

TextToolCalls tool_calls_in_text(std::string_view reply) {
  TextToolCalls out;
  size_t at = reply.find(kOpen);
  if (at != std::string_view::npos) {
    std::string prose;
    size_t pos = 0;
    int n = 0;
    while (at != std::string_view::npos) {
      prose.append(reply.substr(pos, at - pos));
      pos = read_block(reply, at + kOpen.size(), ++n, out);
      at = reply.find(kOpen, pos);
    }
    if (pos < reply.size()) prose.append(reply.substr(pos));
    out.text = std::string(trim(prose));
    return out;
  }
  // No tags: a reply that is only a JSON call (or a list of them) is one; any other text is prose.
  const std::string_view body = unfenced(reply);
  if (!body.empty() && (body.front() == '{' || body.front() == '[')) {
    try {
      const json v = parse_json<json>(body);
      const bool object_call = v.is_object() && (v.contains("name") || v.contains("function"));
      const bool list_of_calls =
          v.is_array() && !v.empty() && v[0].is_object() && (v[0].contains("name") || v[0].contains("function"));
      if (object_call) {
        call_of(v, 1, out);
        return out;
      }
      if (list_of_calls) {
        int n = 0;
        for (const json& c : v) call_of(c, ++n, out);
        return out;
      }
    } catch (const JsonTextError&) {
      // Prose that begins with a brace.
    }
  }
  out.text = std::string(trim(reply));
  return out;
}

}  // namespace kagent::llm
