// The Anthropic provider against a mock Messages API on 127.0.0.1: the request it sends (system
// prompt, alternation, tool results), the response it reads, and how failures end.
#include <gtest/gtest.h>

#include <atomic>
#include <mutex>

#include <nlohmann/json.hpp>

#include "kagent/common/error.hpp"
#include "kagent/llm/provider.hpp"
#include "mock_server.hpp"

namespace kagent::llm {
namespace {

using nlohmann::json;

// Message has members without default initializers, so aggregate initialization with only
// some of them trips -Wmissing-field-initializers.
Message msg(Role role, std::string content) {
  Message m;
  m.role = role;
  m.content = std::move(content);
  return m;
}

constexpr const char* kKey = "sk-ant-secret-456";

LlmConfig anthropic_config(const std::string& base_url) {
  LlmConfig c;
  c.provider = ProviderKind::anthropic;
  c.base_url = base_url;
  c.model = "claude-test";
  c.api_key = kKey;
  c.http.backoff_base = std::chrono::milliseconds(5);
  c.http.backoff_max = std::chrono::milliseconds(20);
  c.http.connect_timeout = std::chrono::milliseconds(2000);
  c.http.idle_timeout = std::chrono::milliseconds(5000);
  return c;
}

ChatRequest simple_request() {
  ChatRequest req;
  req.messages = {msg(Role::system, "be brief"), msg(Role::user, "hi")};
  req.max_tokens = 64;
  return req;
}

const char* kTextReply = R"({"id":"msg_1","type":"message","role":"assistant","content":[{"type":"text","text":"ok"}],)"
                         R"("stop_reason":"end_turn","usage":{"input_tokens":3,"output_tokens":1}})";

// What the mock received, guarded because the handler runs on the server's thread.
struct Received {
  std::mutex mu;
  std::string path, api_key, version, content_type;
  json body;
};

TEST(AnthropicProvider, ToolUseRoundTrip) {
  test::MockServer server;
  Received got;
  server.http().Post("/v1/messages", [&](const httplib::Request& req, httplib::Response& res) {
    {
      std::lock_guard lock(got.mu);
      got.path = req.path;
      got.api_key = req.get_header_value("x-api-key");
      got.version = req.get_header_value("anthropic-version");
      got.content_type = req.get_header_value("content-type");
      got.body = json::parse(req.body);
    }
    res.set_content(R"({"id":"msg_2","type":"message","role":"assistant","model":"claude-test","content":[)"
                    R"({"type":"text","text":"Let me "},{"type":"text","text":"compile it."},)"
                    R"({"type":"tool_use","id":"toolu_9","name":"compile","input":{"file":"k.cu","opt":3}}],)"
                    R"("stop_reason":"tool_use","usage":{"input_tokens":120,"output_tokens":45}})",
                    "application/json");
  });
  server.start();

  ChatRequest req;
  req.max_tokens = 512;
  req.temperature = 0.25;
  req.tools = {{"compile", "Compile a kernel", {{"type", "object"}, {"properties", {{"file", {{"type", "string"}}}}}}},
               {"run", "Run it", nullptr}};
  Message call_turn = msg(Role::assistant, "Compiling both.");
  call_turn.tool_calls = {{"toolu_1", "compile", {{"file", "a.cu"}}, R"({"file":"a.cu"})", ""},
                          {"toolu_2", "run", nullptr, "not json", "arguments are not JSON"}};
  Message result1 = msg(Role::tool, "compiled");
  result1.tool_call_id = "toolu_1";
  result1.tool_name = "compile";
  Message result2 = msg(Role::tool, "bad arguments");
  result2.tool_call_id = "toolu_2";
  result2.tool_name = "run";
  result2.is_error = true;
  req.messages = {msg(Role::system, "You write CUDA."),
                  msg(Role::system, "Be brief."),
                  msg(Role::user, "Write a kernel."),
                  call_turn,
                  result1,
                  result2,
                  msg(Role::user, "Go on.")};

  // A trailing slash on the base URL is tolerated.
  auto provider = make_provider(anthropic_config(server.url("/")));
  EXPECT_EQ(provider->name(), "anthropic");
  ChatResponse r = provider->chat(req);

  std::lock_guard lock(got.mu);
  EXPECT_EQ(got.path, "/v1/messages");
  EXPECT_EQ(got.api_key, kKey);
  EXPECT_EQ(got.version, "2023-06-01");
  EXPECT_EQ(got.content_type, "application/json");
  const json& b = got.body;
  EXPECT_EQ(b["model"], "claude-test");
  EXPECT_EQ(b["max_tokens"], 512);
  EXPECT_DOUBLE_EQ(b["temperature"].get<double>(), 0.25);
  EXPECT_EQ(b["system"], "You write CUDA.\n\nBe brief.");
  ASSERT_EQ(b["tools"].size(), 2u);
  EXPECT_EQ(b["tools"][0]["name"], "compile");
  EXPECT_EQ(b["tools"][0]["description"], "Compile a kernel");
  EXPECT_EQ(b["tools"][0]["input_schema"]["properties"]["file"]["type"], "string");
  EXPECT_EQ(b["tools"][1]["input_schema"]["type"], "object");  // a null schema still sends one

  const json& msgs = b["messages"];
  ASSERT_EQ(msgs.size(), 3u) << msgs.dump(2);
  for (const json& m : msgs) EXPECT_NE(m["role"], "system");
  EXPECT_EQ(msgs[0], json::parse(R"({"role":"user","content":[{"type":"text","text":"Write a kernel."}]})"));
  EXPECT_EQ(msgs[1]["role"], "assistant");
  EXPECT_EQ(msgs[1]["content"], json::parse(R"([{"type":"text","text":"Compiling both."},
      {"type":"tool_use","id":"toolu_1","name":"compile","input":{"file":"a.cu"}},
      {"type":"tool_use","id":"toolu_2","name":"run","input":{}}])"));
  // Both tool results and the following user text form one user message, results first.
  EXPECT_EQ(msgs[2], json::parse(R"({"role":"user","content":[
      {"type":"tool_result","tool_use_id":"toolu_1","content":"compiled"},
      {"type":"tool_result","tool_use_id":"toolu_2","content":"bad arguments","is_error":true},
      {"type":"text","text":"Go on."}]})"));

  EXPECT_EQ(r.message.role, Role::assistant);
  EXPECT_EQ(r.message.content, "Let me compile it.");
  ASSERT_EQ(r.message.tool_calls.size(), 1u);
  const ToolCall& call = r.message.tool_calls[0];
  EXPECT_EQ(call.id, "toolu_9");
  EXPECT_EQ(call.name, "compile");
  EXPECT_EQ(call.arguments, json::parse(R"({"file":"k.cu","opt":3})"));
  EXPECT_EQ(json::parse(call.raw_arguments), call.arguments);
  EXPECT_TRUE(call.arguments_error.empty());
  EXPECT_EQ(r.stop_reason, "tool_use");
  EXPECT_EQ(r.usage.input_tokens, 120);
  EXPECT_EQ(r.usage.output_tokens, 45);
  EXPECT_EQ(r.attempts, 1);
  EXPECT_GE(r.latency_s, 0.0);
}

TEST(AnthropicProvider, NoSystemNoToolsNoTemperatureOmitsThem) {
  test::MockServer server;
  Received got;
  server.http().Post("/v1/messages", [&](const httplib::Request& req, httplib::Response& res) {
    {
      std::lock_guard lock(got.mu);
      got.api_key = req.get_header_value("x-api-key");
      got.body = json::parse(req.body);
    }
    res.set_content(kTextReply, "application/json");
  });
  server.start();

  LlmConfig config = anthropic_config(server.url());
  config.api_key.clear();  // a local proxy may need none: then no header at all
  ChatRequest req;
  req.messages = {msg(Role::user, "a"), msg(Role::user, "b")};
  ChatResponse r = make_provider(config)->chat(req);
  EXPECT_EQ(r.message.content, "ok");
  EXPECT_EQ(r.stop_reason, "end_turn");

  std::lock_guard lock(got.mu);
  EXPECT_EQ(got.api_key, "");
  EXPECT_FALSE(got.body.contains("system"));
  EXPECT_FALSE(got.body.contains("tools"));
  EXPECT_FALSE(got.body.contains("temperature"));
  // Consecutive user messages merge: the API requires alternating roles.
  EXPECT_EQ(got.body["messages"], json::parse(R"([{"role":"user","content":[
      {"type":"text","text":"a"},{"type":"text","text":"b"}]}])"));
}

TEST(AnthropicRetry, OverloadedTwiceThenSucceeds) {
  test::MockServer server;
  std::atomic<int> calls{0};
  server.http().Post("/v1/messages", [&](const httplib::Request&, httplib::Response& res) {
    if (++calls <= 2) {
      res.status = 529;
      res.set_content(R"({"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}})",
                      "application/json");
      return;
    }
    res.set_content(kTextReply, "application/json");
  });
  server.start();

  ChatResponse r = make_provider(anthropic_config(server.url()))->chat(simple_request());
  EXPECT_EQ(calls.load(), 3);
  EXPECT_EQ(r.attempts, 3);
  EXPECT_EQ(r.message.content, "ok");
  EXPECT_EQ(r.usage.input_tokens, 3);
  EXPECT_EQ(r.usage.output_tokens, 1);
}

TEST(AnthropicErrors, UnauthorizedIsEnvironmentAndHidesTheKey) {
  test::MockServer server;
  server.http().Post("/v1/messages", [&](const httplib::Request& req, httplib::Response& res) {
    res.status = 401;
    // A server that echoes the key it rejected: the message must still not show it.
    res.set_content(R"({"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key )" +
                        req.get_header_value("x-api-key") + R"("}})",
                    "application/json");
  });
  server.start();

  try {
    make_provider(anthropic_config(server.url()))->chat(simple_request());
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::environment) << e.what();
    EXPECT_EQ(std::string(e.what()).find(kKey), std::string::npos) << e.what();
  }
}

TEST(AnthropicErrors, BadRequestIsInputErrorWithTheServersMessage) {
  test::MockServer server;
  std::atomic<int> calls{0};
  server.http().Post("/v1/messages", [&](const httplib::Request&, httplib::Response& res) {
    ++calls;
    res.status = 400;
    res.set_content(R"({"type":"error","error":{"type":"invalid_request_error","message":"max_tokens: too large"}})",
                    "application/json");
  });
  server.start();

  try {
    make_provider(anthropic_config(server.url()))->chat(simple_request());
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::bad_input) << e.what();
    EXPECT_NE(std::string(e.what()).find("max_tokens: too large"), std::string::npos) << e.what();
  }
  EXPECT_EQ(calls.load(), 1);  // a 400 does not heal: no retry
}

// Each body is a 2xx that is not a Messages response.
TEST(AnthropicErrors, MalformedSuccessBodyIsEnvironmentError) {
  const std::string long_garbage = "<html>" + std::string(1000, 'x') + kKey + "</html>";
  for (const std::string& body :
       {std::string("{not json"), std::string(R"({"type":"message"})"), std::string(R"([1,2])"), long_garbage}) {
    test::MockServer server;
    server.http().Post("/v1/messages", [&](const httplib::Request&, httplib::Response& res) {
      res.set_content(body, "application/json");
    });
    server.start();
    try {
      make_provider(anthropic_config(server.url()))->chat(simple_request());
      ADD_FAILURE() << "expected an error for " << body;
    } catch (const Error& e) {
      std::string what = e.what();
      EXPECT_EQ(e.code(), ExitCode::environment) << what;
      EXPECT_NE(what.find("anthropic"), std::string::npos) << what;
      EXPECT_EQ(what.find(kKey), std::string::npos) << what;
      EXPECT_LT(what.size(), 500u) << what;  // an excerpt, not the whole body
      EXPECT_NE(what.find(body.substr(0, 8)), std::string::npos) << what;
    }
  }
}

}  // namespace
}  // namespace kagent::llm
