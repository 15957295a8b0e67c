// The OpenAI-compatible Chat Completions provider: api.openai.com and the many servers that speak
// its dialect (vLLM, llama.cpp, Ollama, LM Studio, OpenRouter...). POST {base_url}/chat/completions,
// streamed as server-sent events unless a stream once broke. Compatible servers differ in small
// ways; each quirk tolerated here says so where it is handled.
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <nlohmann/json.hpp>

#include "kagent/common/error.hpp"
#include "kagent/common/json_parse.hpp"
#include "kagent/common/saturate.hpp"
#include "kagent/common/utf8.hpp"
#include "kagent/llm/http.hpp"
#include "kagent/llm/sse.hpp"
#include "kagent/llm/tool_call_text.hpp"
#include "kagent/llm/tool_choice.hpp"
#include "kagent/llm/usage_estimate.hpp"
#include "providers.hpp"

namespace kagent::llm {

namespace {

using nlohmann::json;

constexpr const char* kWhat = "openai chat completions";
constexpr size_t kExcerptChars = 200;

// ---------------------------------------------------------------------------------------------
// Small readers that never throw: a compatible server may send null, or nothing, for any field.

const json& field(const json& j, const char* key) {
  static const json kNull;
  if (!j.is_object()) return kNull;
  auto it = j.find(key);
  return it == j.end() ? kNull : *it;
}

std::string string_field(const json& j, const char* key) {
  const json& v = field(j, key);
  return v.is_string() ? v.get<std::string>() : std::string();
}

// 0 for a missing key and for a value that is no integer in range (1e300 would be UB to convert).
int64_t int_field(const json& j, const char* key) {
  return json_integer(field(j, key)).value_or(0);
}

// Message content is a string, null, or (some servers) an array of {"type":"text","text":...}.
std::string text_of(const json& content) {
  if (content.is_string()) return content.get<std::string>();
  std::string out;
  if (content.is_array())
    for (const json& part : content) out += string_field(part, "text");
  return out;
}

// The choice with index 0 (servers asked for one choice send one, but need not put it first).
const json* first_choice(const json& response) {
  const json& choices = field(response, "choices");
  if (!choices.is_array() || choices.empty()) return nullptr;
  for (const json& c : choices)
    if (int_field(c, "index") == 0) return &c;
  return &choices.front();
}

Usage usage_of(const json& u) {
  Usage usage;
  usage.input_tokens = json_count(field(u, "prompt_tokens"));
  usage.output_tokens = json_count(field(u, "completion_tokens"));
  return usage;
}

// A short, one-line, key-free piece of a body for error messages.
std::string excerpt(std::string text, const std::string& secret) {
  text = redact(std::move(text), secret);
  for (char& c : text)
    if (c == '\n' || c == '\r' || c == '\t') c = ' ';
  return cut_with_ellipsis(text, kExcerptChars);
}

// ---------------------------------------------------------------------------------------------
// Tool calls.

// function.arguments is a JSON string by the spec; some servers send the object itself.
std::string raw_arguments_of(const json& arguments) {
  if (arguments.is_string()) return arguments.get<std::string>();
  if (arguments.is_null()) return "";
  return arguments.dump();
}

ToolCall tool_call_of(const json& tc) {
  ToolCall call;
  call.id = string_field(tc, "id");
  call.name = string_field(field(tc, "function"), "name");
  call.raw_arguments = raw_arguments_of(field(field(tc, "function"), "arguments"));
  complete_tool_call(call);  // an id where the server sent none, the arguments parsed
  return call;
}

// The server's finish_reason in kagent's words (message.hpp); none at all is inferred.
std::string stop_reason_of(const std::string& finish_reason, bool has_tool_calls) {
  if (finish_reason == "tool_calls" || finish_reason == "function_call") return "tool_use";
  if (finish_reason == "stop") return "end_turn";
  if (finish_reason == "length") return "max_tokens";
  if (finish_reason.empty()) return has_tool_calls ? "tool_use" : "end_turn";
  return finish_reason;
}

// ---------------------------------------------------------------------------------------------
// The request.

// null_content: how an assistant turn with tool calls and no text says so. OpenAI's format is
// "content": null; llama-cpp-python's server answers that (and a missing content) with HTTP 500
// and takes only "" (seen with 0.3.36). The provider starts with null and switches to "" for good
// when a server refuses a request that has such a turn (OpenAiProvider::chat).
json message_json(const Message& m, bool null_content) {
  switch (m.role) {
    case Role::system:
    case Role::user:
      return {{"role", std::string(role_name(m.role))}, {"content", m.content}};
    case Role::tool:
      return {{"role", "tool"}, {"tool_call_id", m.tool_call_id}, {"content", m.content}};
    case Role::assistant: {
      json out = {{"role", "assistant"}};
      out["content"] = m.content.empty() && !m.tool_calls.empty() && null_content ? json(nullptr) : json(m.content);
      if (!m.tool_calls.empty()) {
        json calls = json::array();
        for (const ToolCall& c : m.tool_calls) {
          std::string arguments = !c.raw_arguments.empty() ? c.raw_arguments
                                  : c.arguments.is_null()  ? std::string("{}")
                                                           : c.arguments.dump();
          calls.push_back(
              {{"id", c.id}, {"type", "function"}, {"function", {{"name", c.name}, {"arguments", arguments}}}});
        }
        out["tool_calls"] = std::move(calls);
      }
      return out;
    }
  }
  return {};
}

// Whether a request has an assistant turn whose content message_json writes as null.
bool has_textless_tool_turn(const ChatRequest& request) {
  for (const Message& m : request.messages)
    if (m.role == Role::assistant && m.content.empty() && !m.tool_calls.empty()) return true;
  return false;
}

json request_json(const ChatRequest& request, const std::string& model, bool stream, bool null_content = true) {
  json body = {{"model", model}};
  json messages = json::array();
  for (const Message& m : request.messages) messages.push_back(message_json(m, null_content));
  body["messages"] = std::move(messages);
  if (!request.tools.empty()) {
    json tools = json::array();
    for (const ToolSpec& t : request.tools) {
      // Servers reject "parameters": null; a tool without arguments still has an object schema.
      json parameters =
          t.parameters.is_null() ? json{{"type", "object"}, {"properties", json::object()}} : t.parameters;
      tools.push_back({{"type", "function"},
                       {"function", {{"name", t.name}, {"description", t.description}, {"parameters", parameters}}}});
    }
    body["tools"] = std::move(tools);
    body["tool_choice"] = openai_tool_choice(request.tool_choice);
  }
  if (request.max_tokens > 0) body["max_tokens"] = request.max_tokens;
  if (request.temperature) body["temperature"] = *request.temperature;
  if (stream) {
    body["stream"] = true;
    body["stream_options"] = {{"include_usage", true}};  // else a stream reports no usage
  }
  return body;
}

// ---------------------------------------------------------------------------------------------
// A streamed answer, assembled from its chunks.

class StreamAssembler {
 public:
  // Returns false once the stream is broken: reading on would only waste the model's tokens.
  bool feed(std::string_view chunk) {
    for (const SseEvent& e : parser_.feed(chunk)) event(e.data);
    return bad_chunk_.empty();
  }
  void finish() {
    for (const SseEvent& e : parser_.finish()) event(e.data);
  }

  bool started() const { return events_ > 0; }
  // Why the stream cannot be used ("" when it can). `transfer_error`: the transfer broke.
  std::string problem(const std::string& transfer_error) const {
    if (!bad_chunk_.empty()) return bad_chunk_;
    if (done_) return "";
    if (!transfer_error.empty()) return "the transfer broke: " + transfer_error;
    if (!finish_reason_.empty()) return "";  // complete; the server just did not send [DONE]
    if (events_ == 0) return "the response was not an event stream";
    return "the stream ended without [DONE] or a finish_reason";
  }

  ChatResponse response() const {
    ChatResponse out;
    out.message.role = Role::assistant;
    out.message.content = text_;
    for (const auto& [index, partial] : calls_) {
      ToolCall call = partial;
      complete_tool_call(call);  // an id where the server sent none, the arguments parsed
      out.message.tool_calls.push_back(std::move(call));
    }
    out.stop_reason = stop_reason_of(finish_reason_, !calls_.empty());
    out.usage = usage_;
    return out;
  }

 private:
  void event(const std::string& data) {
    if (done_ || !bad_chunk_.empty()) return;  // nothing after [DONE] or a broken chunk counts
    size_t b = data.find_first_not_of(" \t\r\n");
    if (b == std::string::npos) return;  // a keep-alive
    ++events_;
    std::string_view d(data);
    d = d.substr(b, d.find_last_not_of(" \t\r\n") + 1 - b);
    if (d == "[DONE]") {
      done_ = true;
      return;
    }
    // An endpoint may send bytes that are not UTF-8 (a model's broken token); the JSON parser
    // would refuse the whole chunk, so they become U+FFFD first. An event is whole: no character
    // is split here, as it may be between two network chunks.
    const std::string text = valid_utf8(d);
    d = text;
    json chunk;
    try {
      chunk = parse_json<json>(d);
    } catch (const JsonTextError&) {
      chunk = json();
    }
    if (!chunk.is_object()) {
      bad_chunk_ = "a chunk that is not JSON: " + std::string(d.substr(0, 80));
      return;
    }
    if (chunk.contains("error")) {  // an error mid-stream; the non-streaming retry reports it properly
      bad_chunk_ = "the stream reported an error: " + std::string(d.substr(0, 120));
      return;
    }
    if (field(chunk, "usage").is_object()) usage_ = usage_of(chunk["usage"]);  // often a last chunk
    const json* choice = first_choice(chunk);
    if (choice == nullptr) return;
    const json& delta = field(*choice, "delta");
    text_ += text_of(field(delta, "content"));
    const json& calls = field(delta, "tool_calls");
    if (calls.is_array())
      for (const json& fragment : calls) tool_call_fragment(fragment);
    std::string finish = string_field(*choice, "finish_reason");
    if (!finish.empty()) finish_reason_ = finish;
  }

  // Fragments of one call share an `index`: the first usually carries id and name, the others
  // pieces of the arguments string.
  void tool_call_fragment(const json& fragment) {
    int64_t index = 0;
    std::string id = string_field(fragment, "id");
    if (field(fragment, "index").is_number()) {
      index = int_field(fragment, "index");
    } else if (calls_.empty()) {
      index = 0;
    } else {  // no index (some servers): a new id starts a new call, else it continues the last
      index = calls_.rbegin()->first;
      if (!id.empty() && id != calls_.rbegin()->second.id) ++index;
    }
    ToolCall& call = calls_[index];
    if (!id.empty()) call.id = id;
    const json& function = field(fragment, "function");
    if (call.name.empty()) call.name = string_field(function, "name");
    const json& arguments = field(function, "arguments");
    if (arguments.is_string())
      call.raw_arguments += arguments.get<std::string>();
    else if (!arguments.is_null())
      call.raw_arguments = arguments.dump();  // sent whole, as an object
  }

  SseParser parser_;
  int events_ = 0;
  bool done_ = false;
  std::string bad_chunk_;
  std::string text_;
  std::map<int64_t, ToolCall> calls_;  // by index: the order the model meant
  std::string finish_reason_;
  Usage usage_;
};

// ---------------------------------------------------------------------------------------------

class OpenAiProvider : public Provider {
 public:
  explicit OpenAiProvider(const LlmConfig& config)
      : config_(config), http_(config.http), url_(config.base_url), stream_(config.stream) {
    while (!url_.empty() && url_.back() == '/') url_.pop_back();
    url_ += "/chat/completions";
  }

  std::string name() const override { return "openai"; }

  ChatResponse chat(const ChatRequest& request) override {
    try {
      return chat_once(request);
    } catch (const ContextExceeded&) {
      throw;  // too long, not malformed: the agent loop compacts and asks again
    } catch (const Error&) {
      // A server that refuses "content": null beside tool calls (llama-cpp-python) fails every
      // request from the first tool call on: ask once more with "", and keep "" from then on.
      if (!null_content_ || !refused_ || !has_textless_tool_turn(request)) throw;
      spdlog::warn("{} at {} refused a request with \"content\": null beside tool calls; sending \"\" from now on",
                   kWhat, url_);
      null_content_ = false;
      return chat_once(request);
    }
  }

 private:
  ChatResponse chat_once(const ChatRequest& request) {
    refused_ = false;
    int stream_attempts = 0;
    if (stream_) {
      HttpResponse r;
      StreamAssembler stream;
      std::string problem = chat_streaming(request, r, stream);
      if (problem.empty()) return finished(request, stream.response(), r, 0);
      // A proxy or server that cannot stream (or streams badly) usually answers a plain request
      // well; stop asking it to stream so every later call does not pay for a broken stream.
      spdlog::warn("{} at {}: {}; using non-streaming requests from now on", kWhat, url_,
                   redact(problem, config_.api_key));
      stream_ = false;
      stream_attempts = r.attempts;
    }
    HttpResponse r = http_.post(url_, headers(false), request_body(request, false), {}, {}, request.deadline);
    if (r.cancelled || r.status < 200 || r.status >= 300) fail(r, request);
    return finished(request, parse_completion(r.body), r, stream_attempts);
  }

  // An HTTP error, remembering whether the server refused the request (400, 422, 5xx) rather than
  // the key, the URL or the network.
  [[noreturn]] void fail(const HttpResponse& r, const ChatRequest& request) {
    refused_ = !r.cancelled && (r.status == 400 || r.status == 422 || r.status >= 500);
    throw_http_error(kWhat, r, config_, &request);
  }

  // Tool results carry compiler and program output: the agent loop makes them valid UTF-8, and
  // whatever else slipped through has its bad bytes replaced here rather than end the run.
  std::string request_body(const ChatRequest& request, bool stream) const {
    return request_json(request, config_.model, stream, null_content_)
        .dump(-1, ' ', false, json::error_handler_t::replace);
  }

  std::vector<std::string> headers(bool stream) const {
    std::vector<std::string> h = {"Content-Type: application/json"};
    if (!config_.api_key.empty()) h.push_back("Authorization: Bearer " + config_.api_key);
    if (stream) h.push_back("Accept: text/event-stream");
    return h;
  }

  // Returns "" when `stream` holds a complete answer, else why the stream cannot be used. Throws
  // for what a non-streaming request would not heal: no answer at all, an HTTP error, Ctrl-C.
  std::string chat_streaming(const ChatRequest& request, HttpResponse& r, StreamAssembler& stream) {
    r = http_.post(
        url_, headers(true), request_body(request, true),
        [&stream](std::string_view chunk) { return stream.feed(chunk); },
        [&stream] { stream = StreamAssembler(); },  // a retry starts the stream afresh
        request.deadline);
    bool transport_failed = r.status == 0 || !r.transport_error.empty();
    // A stream over the size bound or cut at the deadline is no broken stream: asking again
    // without streaming would only pay for it twice.
    if (r.cancelled || r.too_large || r.deadline_passed || (r.status == 0 && !stream.started()) ||
        (r.status != 0 && (r.status < 200 || r.status >= 300)))
      fail(r, request);
    stream.finish();
    return stream.problem(transport_failed ? (r.transport_error.empty() ? "no response" : r.transport_error) : "");
  }

  // A 2xx body that is no chat completion: the endpoint is not what the config says it is.
  [[noreturn]] void invalid_response(const std::string& body, const std::string& why) const {
    throw Error(ExitCode::environment,
                fmt::format("{} at {}: {} (the body begins: {})", kWhat, url_, why, excerpt(body, config_.api_key)));
  }

  ChatResponse parse_completion(const std::string& raw_body) const {
    // Bytes that are not UTF-8 in the model's text become U+FFFD rather than fail the parse.
    const std::string body = valid_utf8(raw_body);
    json response;
    try {
      response = parse_json<json>(body);
    } catch (const JsonTextError& e) {
      invalid_response(body, fmt::format("the response is not JSON ({})", e.what()));
    }
    const json* choice = first_choice(response);
    if (choice == nullptr) invalid_response(body, "the response has no choices");
    const json& message = field(*choice, "message");
    if (!message.is_object()) invalid_response(body, "the first choice has no message");

    ChatResponse out;
    out.message.role = Role::assistant;
    out.message.content = text_of(field(message, "content"));
    if (const json& calls = field(message, "tool_calls"); calls.is_array())
      for (const json& tc : calls) out.message.tool_calls.push_back(tool_call_of(tc));
    // The legacy single "function_call" some older servers still send.
    if (const json& fc = field(message, "function_call"); fc.is_object() && out.message.tool_calls.empty())
      out.message.tool_calls.push_back(tool_call_of({{"function", fc}}));
    out.stop_reason = stop_reason_of(string_field(*choice, "finish_reason"), !out.message.tool_calls.empty());
    out.usage = usage_of(field(response, "usage"));
    return out;
  }

  // A reply without usage (llama-cpp-python's streams) gets the figures estimated, and marked so.
  ChatResponse finished(const ChatRequest& request, ChatResponse out, const HttpResponse& r, int earlier_attempts) {
    out.latency_s = r.seconds;
    out.attempts = r.attempts + earlier_attempts;
    out.usage = usage_.account(request, out.message, out.usage);
    return out;
  }

  LlmConfig config_;
  HttpClient http_;
  std::string url_;
  bool stream_;               // false once a stream broke: this server is then asked plainly
  bool null_content_ = true;  // "content": null beside tool calls, until a server refuses it
  bool refused_ = false;      // the last failure was the server refusing the request
  UsageEstimator usage_;
};

}  // namespace

std::unique_ptr<Provider> make_openai_provider(const LlmConfig& config) {
  return std::make_unique<OpenAiProvider>(config);
}

}  // namespace kagent::llm
