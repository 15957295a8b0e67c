// The Anthropic Messages API (POST /v1/messages, non-streaming): kagent's neutral messages to
// Anthropic's content blocks and back. The wire format differs from OpenAI's in three ways that
// shape this file: the system prompt is a top-level field, tool results are user messages made
// of tool_result blocks, and user and assistant turns must alternate.
#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "kagent/common/error.hpp"
#include "kagent/common/json_parse.hpp"
#include "kagent/common/saturate.hpp"
#include "kagent/common/utf8.hpp"
#include "kagent/llm/tool_choice.hpp"
#include "kagent/llm/usage_estimate.hpp"
#include "providers.hpp"

namespace kagent::llm {

namespace {

using nlohmann::json;

constexpr const char* kApiVersion = "2023-06-01";
constexpr const char* kDefaultBaseUrl = "https://api.anthropic.com";
constexpr size_t kExcerptChars = 200;

std::string messages_url(std::string base) {
  if (base.empty()) base = kDefaultBaseUrl;
  while (!base.empty() && base.back() == '/') base.pop_back();
  // The documented base has no /v1, but people copy OpenAI-style bases that end in it: accept
  // both rather than post to .../v1/v1/messages and report a puzzling 404.
  if (base.size() >= 3 && base.compare(base.size() - 3, 3, "/v1") == 0) return base + "/messages";
  return base + "/v1/messages";
}

// Anthropic requires `input` to be an object; arguments that never parsed (the model's format
// error, already reported back to it in the tool result) are sent as {}.
json tool_input(const ToolCall& call) {
  return call.arguments.is_object() ? call.arguments : json::object();
}

// The content blocks one neutral message contributes, and the role it speaks in.
std::pair<std::string, json> to_blocks(const Message& m) {
  json blocks = json::array();
  switch (m.role) {
    case Role::system:
      break;  // collected into the top-level "system" field by the caller
    case Role::user:
      // The API rejects empty text blocks.
      if (!m.content.empty()) blocks.push_back({{"type", "text"}, {"text", m.content}});
      return {"user", blocks};
    case Role::assistant:
      if (!m.content.empty()) blocks.push_back({{"type", "text"}, {"text", m.content}});
      for (const ToolCall& call : m.tool_calls) {
        blocks.push_back({{"type", "tool_use"}, {"id", call.id}, {"name", call.name}, {"input", tool_input(call)}});
      }
      return {"assistant", blocks};
    case Role::tool: {
      json result = {{"type", "tool_result"}, {"tool_use_id", m.tool_call_id}, {"content", m.content}};
      if (m.is_error) result["is_error"] = true;
      blocks.push_back(std::move(result));
      return {"user", blocks};
    }
  }
  return {"user", blocks};
}

json request_body(const ChatRequest& request, const std::string& model) {
  std::string system;
  json messages = json::array();
  for (const Message& m : request.messages) {
    if (m.role == Role::system) {
      if (!system.empty()) system += "\n\n";
      system += m.content;
      continue;
    }
    auto [role, blocks] = to_blocks(m);
    if (blocks.empty()) continue;
    // Roles must alternate: consecutive tool results (one per call of a turn) and any other run
    // of same-role messages become one message.
    if (!messages.empty() && messages.back()["role"] == role) {
      json& content = messages.back()["content"];
      for (json& b : blocks) content.push_back(std::move(b));
    } else {
      messages.push_back({{"role", role}, {"content", std::move(blocks)}});
    }
  }

  json body = {{"model", model}, {"max_tokens", request.max_tokens}};
  if (!system.empty()) body["system"] = system;
  if (request.temperature) body["temperature"] = *request.temperature;
  if (!request.tools.empty()) {
    json tools = json::array();
    for (const ToolSpec& t : request.tools) {
      json schema = t.parameters.is_null() ? json{{"type", "object"}, {"properties", json::object()}} : t.parameters;
      tools.push_back({{"name", t.name}, {"description", t.description}, {"input_schema", std::move(schema)}});
    }
    body["tools"] = std::move(tools);
    body["tool_choice"] = anthropic_tool_choice(request.tool_choice);
  }
  body["messages"] = std::move(messages);
  return body;
}

// A 2xx whose body is not a Messages response (a proxy's HTML page, a truncated body): the
// endpoint is not what the configuration says it is, so this is the environment's failure.
[[noreturn]] void throw_unexpected(const std::string& url, const HttpResponse& r, const LlmConfig& config,
                                   const std::string& why) {
  // Redact before cutting, so that a cut can never leave a recognisable part of the key.
  std::string excerpt = redact(r.body, config.api_key);
  if (excerpt.size() > kExcerptChars) excerpt = excerpt.substr(0, kExcerptChars) + "...";
  throw Error(ExitCode::environment,
              fmt::format("anthropic messages: {} answered HTTP {} with {} (expected a Messages API response): {}",
                          redact(url, config.api_key), r.status, why, excerpt));
}

int64_t token_count(const json& usage, const char* key) {
  auto it = usage.find(key);
  return it != usage.end() ? json_count(*it) : 0;
}

ChatResponse parse_response(const std::string& url, const HttpResponse& r, const LlmConfig& config) {
  json doc;
  try {
    // Bytes that are not UTF-8 in the model's text become U+FFFD rather than fail the parse.
    doc = parse_json<json>(valid_utf8(r.body));
  } catch (const JsonTextError& e) {
    throw_unexpected(url, r, config, fmt::format("a body that is not JSON ({})", e.what()));
  }
  if (!doc.is_object()) throw_unexpected(url, r, config, "JSON that is not an object");
  auto content = doc.find("content");
  if (content == doc.end() || !content->is_array()) {
    throw_unexpected(url, r, config, "JSON without a \"content\" array");
  }

  ChatResponse out;
  out.message.role = Role::assistant;
  for (const json& block : *content) {
    if (!block.is_object()) throw_unexpected(url, r, config, "a content block that is not an object");
    std::string type = block.value("type", "");
    if (type == "text") {
      auto text = block.find("text");
      if (text != block.end() && text->is_string()) out.message.content += text->get<std::string>();
    } else if (type == "tool_use") {
      ToolCall call;
      call.id = block.value("id", "");
      if (call.id.empty()) call.id = fmt::format("toolu_kagent_{}", out.message.tool_calls.size());
      call.name = block.value("name", "");
      auto input = block.find("input");
      call.arguments = input != block.end() && !input->is_null() ? *input : json::object();
      call.raw_arguments = call.arguments.dump();
      if (!call.arguments.is_object()) call.arguments_error = "tool input is not a JSON object";
      out.message.tool_calls.push_back(std::move(call));
    }
    // Other block types (thinking, redacted_thinking, ...) carry nothing the agent uses.
  }

  auto stop = doc.find("stop_reason");
  if (stop != doc.end() && stop->is_string()) {
    out.stop_reason = stop->get<std::string>();
  } else {
    out.stop_reason = out.message.tool_calls.empty() ? "end_turn" : "tool_use";
  }
  auto usage = doc.find("usage");
  if (usage != doc.end() && usage->is_object()) {
    // Prompt-cache reads and writes are input the model read too; counting them keeps the
    // budget honest should a proxy turn caching on.
    out.usage.input_tokens = saturating_add(
        saturating_add(token_count(*usage, "input_tokens"), token_count(*usage, "cache_creation_input_tokens")),
        token_count(*usage, "cache_read_input_tokens"));
    out.usage.output_tokens = token_count(*usage, "output_tokens");
  }
  out.latency_s = r.seconds;
  out.attempts = r.attempts;
  return out;
}

class AnthropicProvider : public Provider {
 public:
  explicit AnthropicProvider(const LlmConfig& config)
      : config_(config), client_(config.http), url_(messages_url(config.base_url)) {}

  ChatResponse chat(const ChatRequest& request) override {
    std::vector<std::string> headers = {
        "content-type: application/json",
        "accept: application/json",
        fmt::format("anthropic-version: {}", kApiVersion),
    };
    if (!config_.api_key.empty()) headers.push_back("x-api-key: " + config_.api_key);
    // Tool results carry compiler and program output: the agent loop makes them valid UTF-8, and
    // whatever else slipped through has its bad bytes replaced here rather than end the run.
    std::string body = request_body(request, config_.model).dump(-1, ' ', false, json::error_handler_t::replace);
    HttpResponse r = client_.post(url_, headers, body, {}, {}, request.deadline);
    if (r.status < 200 || r.status >= 300) throw_http_error("anthropic messages", r, config_, &request);
    ChatResponse out = parse_response(url_, r, config_);
    // A proxy or compatible server that sends no usage: estimated, and marked so.
    out.usage = usage_.account(request, out.message, out.usage);
    return out;
  }

  std::string name() const override { return "anthropic"; }

 private:
  LlmConfig config_;
  HttpClient client_;
  std::string url_;
  UsageEstimator usage_;
};

}  // namespace

std::unique_ptr<Provider> make_anthropic_provider(const LlmConfig& config) {
  return std::make_unique<AnthropicProvider>(config);
}

}  // namespace kagent::llm
