// What a llama.cpp-family server (llama-cpp-python's server, --chat_format
// chatml-function-calling) does that a hosted API does not, against a mock on 127.0.0.1: streams
// without usage, a 200 event stream with an empty body, HTTP 500 for tool_choice "required", a named
// tool choice streamed with the id and name repeated in every chunk. Also tool_choice on the wire of
// both providers, and the token estimate when a reply has no usage.
#include <gtest/gtest.h>

#include <cmath>
#include <mutex>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "kagent/common/error.hpp"
#include "kagent/llm/provider.hpp"
#include "kagent/llm/tool_choice.hpp"
#include "kagent/llm/usage_estimate.hpp"
#include "mock_server.hpp"

namespace kagent::llm {
namespace {

using nlohmann::json;
using test::MockServer;

const std::string kKey = "sk-quirks-secret-789";
const char* kPath = "/v1/chat/completions";

LlmConfig openai_config(const MockServer& server, bool stream) {
  LlmConfig c;
  c.provider = ProviderKind::openai;
  c.base_url = server.url("/v1");
  c.model = "gemma-3-270m";
  c.api_key = kKey;
  c.api_key_source = "$OPENAI_API_KEY";
  c.stream = stream;
  c.http.max_attempts = 2;
  c.http.backoff_base = std::chrono::milliseconds(5);
  c.http.backoff_max = std::chrono::milliseconds(20);
  c.http.idle_timeout = std::chrono::milliseconds(2000);
  c.http.connect_timeout = std::chrono::milliseconds(1000);
  return c;
}

LlmConfig anthropic_config(const MockServer& server) {
  LlmConfig c = openai_config(server, false);
  c.provider = ProviderKind::anthropic;
  c.base_url = server.url();
  c.model = "claude-test";
  return c;
}

Message msg(Role role, const std::string& content) {
  Message m;
  m.role = role;
  m.content = content;
  return m;
}

ChatRequest request_with_tools(const std::string& tool_choice = "") {
  ChatRequest r;
  r.messages.push_back(msg(Role::system, "You write CUDA kernels."));
  r.messages.push_back(msg(Role::user, "Evaluate k.cu"));
  r.tools.push_back({"evaluate",
                     "Evaluate a candidate.",
                     {{"type", "object"}, {"properties", {{"path", {{"type", "string"}}}}}, {"required", {"path"}}}});
  r.tools.push_back({"finish", "End the run.", {{"type", "object"}, {"properties", {{"path", {{"type", "string"}}}}}}});
  r.tool_choice = tool_choice;
  return r;
}

// Every request body the server received (handlers run on the server's threads).
struct Received {
  std::mutex mu;
  std::vector<json> bodies;
  json add(const httplib::Request& req) {
    std::lock_guard<std::mutex> lock(mu);
    bodies.push_back(json::parse(req.body, nullptr, false));
    return bodies.back();
  }
  std::vector<json> all() {
    std::lock_guard<std::mutex> lock(mu);
    return bodies;
  }
};

bool streamed(const json& body) {
  return body.is_object() && body.value("stream", false);
}

json completion(const json& message, const std::string& finish_reason, const json& usage) {
  json c = {{"id", "chatcmpl-1"},
            {"object", "chat.completion"},
            {"choices", {{{"index", 0}, {"message", message}, {"finish_reason", finish_reason}}}}};
  if (!usage.is_null()) c["usage"] = usage;
  return c;
}

std::string sse(const json& chunk) {
  return "data: " + chunk.dump() + "\n\n";
}

// A chunk as llama-cpp-python writes it: "usage" absent, "delta" with nulls.
std::string text_chunk(const std::string& text, const json& finish_reason = nullptr) {
  return sse({{"id", "chatcmpl-1"},
              {"object", "chat.completion.chunk"},
              {"choices",
               {{{"index", 0}, {"delta", {{"role", nullptr}, {"content", text}}}, {"finish_reason", finish_reason}}}}});
}

void stream_body(httplib::Response& res, const std::string& body) {
  res.set_chunked_content_provider("text/event-stream", [body](size_t, httplib::DataSink& sink) {
    if (!body.empty()) sink.write(body.data(), body.size());
    sink.done();
    return true;
  });
}

// The documented rule's byte count of a request: messages' text and the tools' JSON.
size_t request_bytes(const ChatRequest& r) {
  size_t n = 0;
  for (const auto& m : r.messages) n += m.content.size();
  for (const auto& t : r.tools) n += t.name.size() + t.description.size() + t.parameters.dump().size();
  return n;
}

std::string thrown_by(Provider& provider, const ChatRequest& request, ExitCode* code = nullptr) {
  try {
    provider.chat(request);
  } catch (const Error& e) {
    if (code != nullptr) *code = e.code();
    return e.what();
  }
  ADD_FAILURE() << "chat() did not throw kagent::Error";
  return "";
}

// ---------------------------------------------------------------------------------------------
// tool_choice: kagent's spelling and both wire formats.

TEST(ToolChoice, MapsToBothWireFormats) {
  EXPECT_EQ(openai_tool_choice(""), "auto");
  EXPECT_EQ(openai_tool_choice("auto"), "auto");
  EXPECT_EQ(openai_tool_choice("required"), "required");
  EXPECT_EQ(openai_tool_choice("evaluate"), json({{"type", "function"}, {"function", {{"name", "evaluate"}}}}));
  EXPECT_EQ(anthropic_tool_choice("auto"), json({{"type", "auto"}}));
  EXPECT_EQ(anthropic_tool_choice("required"), json({{"type", "any"}}));
  EXPECT_EQ(anthropic_tool_choice("evaluate"), json({{"type", "tool"}, {"name", "evaluate"}}));
}

TEST(ToolChoice, BadValuesAreBadInputNamingTheSource) {
  for (const char* ok : {"auto", "required", "evaluate", "write_file", "my-tool2"})
    EXPECT_NO_THROW(check_tool_choice(ok, "flag")) << ok;
  for (const char* bad : {"none", "", "eval uate", "a/b", "{\"type\":\"any\"}"}) {
    try {
      check_tool_choice(bad, "env $KAGENT_TOOL_CHOICE");
      ADD_FAILURE() << bad;
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find("env $KAGENT_TOOL_CHOICE"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("expected auto, required or a tool's name"), std::string::npos) << e.what();
    }
  }
  EXPECT_THROW(check_tool_choice(std::string(65, 'a'), "flag"), InputError);
}

TEST(ToolChoice, OpenAiRequestCarriesEachChoice) {
  MockServer server;
  Received received;
  server.http().Post(kPath, [&](const httplib::Request& req, httplib::Response& res) {
    received.add(req);
    json message = {{"role", "assistant"}, {"content", "ok"}};
    res.set_content(completion(message, "stop", {{"prompt_tokens", 9}, {"completion_tokens", 1}}).dump(),
                    "application/json");
  });
  server.start();
  auto provider = make_provider(openai_config(server, false));
  for (const char* choice : {"", "required", "evaluate"}) provider->chat(request_with_tools(choice));
  auto bodies = received.all();
  ASSERT_EQ(bodies.size(), 3u);
  EXPECT_EQ(bodies[0]["tool_choice"], "auto");
  EXPECT_EQ(bodies[1]["tool_choice"], "required");
  EXPECT_EQ(bodies[2]["tool_choice"], json({{"type", "function"}, {"function", {{"name", "evaluate"}}}}));
}

TEST(ToolChoice, AnthropicRequestCarriesEachChoice) {
  MockServer server;
  Received received;
  server.http().Post("/v1/messages", [&](const httplib::Request& req, httplib::Response& res) {
    received.add(req);
    res.set_content(R"({"type":"message","role":"assistant","content":[{"type":"text","text":"ok"}],)"
                    R"("stop_reason":"end_turn","usage":{"input_tokens":3,"output_tokens":1}})",
                    "application/json");
  });
  server.start();
  auto provider = make_provider(anthropic_config(server));
  for (const char* choice : {"auto", "required", "evaluate"}) provider->chat(request_with_tools(choice));
  ChatRequest no_tools;
  no_tools.messages.push_back(msg(Role::user, "hi"));
  provider->chat(no_tools);
  auto bodies = received.all();
  ASSERT_EQ(bodies.size(), 4u);
  EXPECT_EQ(bodies[0]["tool_choice"], json({{"type", "auto"}}));
  EXPECT_EQ(bodies[1]["tool_choice"], json({{"type", "any"}}));
  EXPECT_EQ(bodies[2]["tool_choice"], json({{"type", "tool"}, {"name", "evaluate"}}));
  EXPECT_FALSE(bodies[3].contains("tool_choice")) << "no tools, no tool choice";
}

// llama-cpp-python answers tool_choice "required" with HTTP 500: the error names the choice as the
// likely cause, where it came from and how to do without; tool_choice auto's 500 does not.
TEST(ToolChoice, ServerErrorOnRequiredNamesTheChoice) {
  MockServer server;
  Received received;
  server.http().Post(kPath, [&](const httplib::Request& req, httplib::Response& res) {
    received.add(req);
    res.status = 500;
    res.set_content(R"({"error": {"message": "Internal Server Error: 'str' object has no attribute 'get'"}})",
                    "application/json");
  });
  server.start();
  for (bool stream : {true, false}) {
    LlmConfig config = openai_config(server, stream);
    config.tool_choice = "required";
    config.origin["tool_choice"] = "env $KAGENT_TOOL_CHOICE";
    auto provider = make_provider(config);
    ExitCode code = ExitCode::ok;
    std::string e = thrown_by(*provider, request_with_tools("required"), &code);
    EXPECT_EQ(code, ExitCode::environment) << e;
    EXPECT_NE(e.find("HTTP 500"), std::string::npos) << e;
    EXPECT_NE(e.find("tool_choice 'required' (from env $KAGENT_TOOL_CHOICE)"), std::string::npos) << e;
    EXPECT_NE(e.find("likely cause"), std::string::npos) << e;
    EXPECT_NE(e.find("--tool-choice auto"), std::string::npos) << e;
    EXPECT_EQ(e.find(kKey), std::string::npos) << e;
    std::string plain = thrown_by(*provider, request_with_tools("auto"));
    EXPECT_EQ(plain.find("tool_choice"), std::string::npos) << plain;
  }
  // Anthropic's side says the same.
  MockServer anthropic;
  anthropic.http().Post("/v1/messages", [&](const httplib::Request&, httplib::Response& res) {
    res.status = 500;
    res.set_content(R"({"type":"error","error":{"type":"api_error","message":"boom"}})", "application/json");
  });
  anthropic.start();
  std::string e = thrown_by(*make_provider(anthropic_config(anthropic)), request_with_tools("evaluate"));
  EXPECT_NE(e.find("tool_choice 'evaluate'"), std::string::npos) << e;
}

// ---------------------------------------------------------------------------------------------
// Streams as llama-cpp-python sends them.

// tool_choice auto, streamed: HTTP 200, text/event-stream, and an empty chunked body. kagent asks
// again without streaming, and from then on does not stream.
TEST(LlamaCppStream, EmptyEventStreamFallsBackToAPlainRequest) {
  MockServer server;
  Received received;
  server.http().Post(kPath, [&](const httplib::Request& req, httplib::Response& res) {
    if (streamed(received.add(req))) return stream_body(res, "");
    json call = {{"id", "call_1"},
                 {"type", "function"},
                 {"function", {{"name", "evaluate"}, {"arguments", R"({"path": "k.cu"})"}}}};
    json message = {{"role", "assistant"}, {"content", nullptr}, {"tool_calls", json::array({call})}};
    res.set_content(completion(message, "tool_calls", {{"prompt_tokens", 300}, {"completion_tokens", 12}}).dump(),
                    "application/json");
  });
  server.start();
  auto provider = make_provider(openai_config(server, true));
  ChatResponse first = provider->chat(request_with_tools());
  ASSERT_EQ(first.message.tool_calls.size(), 1u);
  EXPECT_EQ(first.message.tool_calls[0].name, "evaluate");
  EXPECT_EQ(first.message.tool_calls[0].arguments, json({{"path", "k.cu"}}));
  EXPECT_EQ(first.usage.input_tokens, 300);
  EXPECT_FALSE(first.usage.estimated);
  provider->chat(request_with_tools());
  auto bodies = received.all();
  ASSERT_EQ(bodies.size(), 3u);
  EXPECT_TRUE(streamed(bodies[0]));
  EXPECT_FALSE(streamed(bodies[1]));
  EXPECT_FALSE(streamed(bodies[2])) << "no second try at streaming";
}

// A named tool choice, streamed: every chunk repeats the call's index, id and name beside the next
// piece of the arguments (and a legacy function_call). One call, its name once, the arguments whole.
TEST(LlamaCppStream, NamedToolChoiceRepeatingIdAndNameIsOneCall) {
  MockServer server;
  Received received;
  const std::string id = "call__0_evaluate_cmpl-42";
  server.http().Post(kPath, [&](const httplib::Request& req, httplib::Response& res) {
    received.add(req);
    std::string body = sse({{"id", "chatcmpl-42"},
                            {"object", "chat.completion.chunk"},
                            {"choices",
                             {{{"index", 0},
                               {"finish_reason", nullptr},
                               {"delta", {{"role", "assistant"}, {"content", nullptr}, {"tool_calls", nullptr}}}}}}});
    for (const char* piece : {"{\"pa", "th\": ", "\"k.", "cu\"", "}"}) {
      json delta = {{"role", nullptr},
                    {"content", nullptr},
                    {"function_call", {{"name", "evaluate"}, {"arguments", piece}}},
                    {"tool_calls",
                     {{{"index", 0},
                       {"id", id},
                       {"type", "function"},
                       {"function", {{"name", "evaluate"}, {"arguments", piece}}}}}}};
      body += sse({{"id", "chatcmpl-42"},
                   {"object", "chat.completion.chunk"},
                   {"choices", {{{"index", 0}, {"finish_reason", nullptr}, {"delta", delta}}}}});
    }
    body += sse({{"id", "chatcmpl-42"},
                 {"object", "chat.completion.chunk"},
                 {"choices",
                  {{{"index", 0},
                    {"finish_reason", "tool_calls"},
                    {"delta", {{"role", nullptr}, {"content", nullptr}, {"tool_calls", nullptr}}}}}}});
    body += "data: [DONE]\n\n";
    stream_body(res, body);
  });
  server.start();
  ChatResponse res = make_provider(openai_config(server, true))->chat(request_with_tools("evaluate"));
  auto bodies = received.all();
  ASSERT_EQ(bodies.size(), 1u) << "the stream was used, not a fallback";
  EXPECT_EQ(bodies[0]["tool_choice"], json({{"type", "function"}, {"function", {{"name", "evaluate"}}}}));
  ASSERT_EQ(res.message.tool_calls.size(), 1u);
  const ToolCall& call = res.message.tool_calls[0];
  EXPECT_EQ(call.id, id);
  EXPECT_EQ(call.name, "evaluate");
  EXPECT_EQ(call.raw_arguments, R"({"path": "k.cu"})");
  EXPECT_EQ(call.arguments, json({{"path", "k.cu"}}));
  EXPECT_EQ(call.arguments_error, "");
  EXPECT_EQ(res.stop_reason, "tool_use");
  EXPECT_TRUE(res.usage.estimated) << "this stream carried no usage";
}

// ---------------------------------------------------------------------------------------------
// Usage: never a silent 0.

// A stream without usage: estimated by bytes/4 and marked; a plain reply's usage stays real.
TEST(Usage, StreamWithoutUsageIsEstimatedAndMarked) {
  MockServer server;
  server.http().Post(kPath, [&](const httplib::Request&, httplib::Response& res) {
    stream_body(res, text_chunk(std::string(400, 'x')) + text_chunk("", "stop") + "data: [DONE]\n\n");
  });
  server.start();
  ChatRequest request = request_with_tools();
  ChatResponse res = make_provider(openai_config(server, true))->chat(request);
  EXPECT_TRUE(res.usage.estimated);
  EXPECT_EQ(res.usage.output_tokens, 100) << "400 bytes at 4 bytes a token";
  EXPECT_EQ(res.usage.input_tokens, static_cast<int64_t>((request_bytes(request) + 3) / 4));
}

// Real figures of the same conversation are preferred: a later reply without usage counts the
// last real input + output, plus only what was added since at the ratio those figures taught.
TEST(Usage, RealFiguresOfTheConversationArePreferredToTheEstimate) {
  MockServer server;
  int n = 0;
  server.http().Post(kPath, [&](const httplib::Request&, httplib::Response& res) {
    if (n++ == 0) {  // this stream carries its usage in a last chunk
      json last = {{"id", "chatcmpl-1"},
                   {"object", "chat.completion.chunk"},
                   {"choices", json::array()},
                   {"usage", {{"prompt_tokens", 100}, {"completion_tokens", 40}}}};
      return stream_body(res, text_chunk("Let me look.") + text_chunk("", "stop") + sse(last) + "data: [DONE]\n\n");
    }
    stream_body(res, text_chunk(std::string(80, 'y')) + text_chunk("", "stop") + "data: [DONE]\n\n");
  });
  server.start();
  auto provider = make_provider(openai_config(server, true));
  ChatRequest request = request_with_tools();
  const double per_byte = 100.0 / static_cast<double>(request_bytes(request));
  ChatResponse first = provider->chat(request);
  EXPECT_FALSE(first.usage.estimated);
  EXPECT_EQ(first.usage.input_tokens, 100);

  request.messages.push_back(first.message);
  request.messages.push_back(msg(Role::user, std::string(200, 'n')));
  ChatResponse second = provider->chat(request);
  EXPECT_TRUE(second.usage.estimated);
  EXPECT_EQ(second.usage.input_tokens, 100 + 40 + static_cast<int64_t>(std::ceil(200 * per_byte)));
  EXPECT_EQ(second.usage.output_tokens, static_cast<int64_t>(std::ceil(80 * per_byte)));
}

// A different conversation (or a compacted one) does not reuse the figures: the plain rule.
TEST(Usage, AnotherConversationFallsBackToTheRatio) {
  UsageEstimator estimator;
  ChatRequest a;
  a.messages.push_back(msg(Role::user, std::string(1000, 'a')));
  estimator.account(a, msg(Role::assistant, "ok"), Usage{500, 2, false});  // 1/2 token a byte
  ChatRequest b;
  b.messages.push_back(msg(Role::user, std::string(100, 'b')));
  Usage u = estimator.account(b, msg(Role::assistant, std::string(10, 'r')), Usage{});
  EXPECT_TRUE(u.estimated);
  EXPECT_EQ(u.input_tokens, 50);
  EXPECT_EQ(u.output_tokens, 5);
  // Figures out of reason do not make the ratio absurd (kept within [1/16, 1]).
  estimator.account(a, msg(Role::assistant, "ok"), Usage{int64_t{1} << 50, 2, false});
  EXPECT_EQ(estimator.account(b, msg(Role::assistant, ""), Usage{}).input_tokens, 100);
}

// Anthropic: a compatible server or proxy that sends no usage gets the estimate too.
TEST(Usage, AnthropicWithoutUsageIsEstimated) {
  MockServer server;
  server.http().Post("/v1/messages", [&](const httplib::Request&, httplib::Response& res) {
    res.set_content(json{{"type", "message"},
                         {"role", "assistant"},
                         {"content", {{{"type", "text"}, {"text", std::string(40, 'z')}}}},
                         {"stop_reason", "end_turn"}}
                        .dump(),
                    "application/json");
  });
  server.start();
  ChatResponse r = make_provider(anthropic_config(server))->chat(request_with_tools());
  EXPECT_TRUE(r.usage.estimated);
  EXPECT_EQ(r.usage.output_tokens, 10);
  EXPECT_GT(r.usage.input_tokens, 0);
}

}  // namespace
}  // namespace kagent::llm
