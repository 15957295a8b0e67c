// The OpenAI-compatible provider against a real HTTP server on 127.0.0.1: the request it sends,
// plain and streamed answers, the fallback from a broken stream, the quirks of compatible
// servers, and the errors (never with the API key in them).
#include <gtest/gtest.h>

#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "kagent/common/error.hpp"
#include "kagent/llm/provider.hpp"
#include "log_capture.hpp"
#include "mock_server.hpp"

namespace kagent::llm {
namespace {

using nlohmann::json;
using test::MockServer;

const std::string kKey = "sk-test-secret-123";
const char* kPath = "/v1/chat/completions";

LlmConfig config_for(const MockServer& server, bool stream) {
  LlmConfig c;
  c.provider = ProviderKind::openai;
  c.base_url = server.url("/v1");
  c.model = "test-model";
  c.api_key = kKey;
  c.api_key_source = "$OPENAI_API_KEY";
  c.stream = stream;
  c.http.backoff_base = std::chrono::milliseconds(5);
  c.http.backoff_max = std::chrono::milliseconds(20);
  c.http.idle_timeout = std::chrono::milliseconds(300);
  c.http.connect_timeout = std::chrono::milliseconds(1000);
  return c;
}

// What the server received, one entry per request (handlers run on the server's threads).
struct Received {
  std::mutex mu;
  std::vector<json> bodies;
  std::vector<httplib::Headers> headers;

  json add(const httplib::Request& req) {
    std::lock_guard<std::mutex> lock(mu);
    bodies.push_back(json::parse(req.body, nullptr, false));
    headers.push_back(req.headers);
    return bodies.back();
  }
  size_t count(bool streamed) {
    std::lock_guard<std::mutex> lock(mu);
    size_t n = 0;
    for (const json& b : bodies) n += b.is_object() && b.value("stream", false) == streamed;
    return n;
  }
  std::string header(size_t i, const std::string& name) {
    std::lock_guard<std::mutex> lock(mu);
    auto it = headers.at(i).find(name);
    return it == headers.at(i).end() ? "" : it->second;
  }
};

bool is_stream_request(const json& body) {
  return body.is_object() && body.value("stream", false);
}

json usage(int in, int out) {
  return {{"prompt_tokens", in}, {"completion_tokens", out}, {"total_tokens", in + out}};
}

json completion(const json& message, const std::string& finish_reason, const json& u = usage(12, 7)) {
  return {{"id", "chatcmpl-1"},
          {"object", "chat.completion"},
          {"model", "test-model"},
          {"choices", {{{"index", 0}, {"message", message}, {"finish_reason", finish_reason}}}},
          {"usage", u}};
}

json tool_call(const std::string& id, const std::string& name, const json& arguments) {
  json call = {{"type", "function"}, {"function", {{"name", name}, {"arguments", arguments}}}};
  if (!id.empty()) call["id"] = id;
  return call;
}

// One SSE event carrying a chat.completion.chunk with `delta` (and a finish_reason).
std::string chunk(const json& delta, const json& finish_reason = nullptr) {
  json c = {{"id", "chatcmpl-1"},
            {"object", "chat.completion.chunk"},
            {"choices", {{{"index", 0}, {"delta", delta}, {"finish_reason", finish_reason}}}}};
  return "data: " + c.dump() + "\n\n";
}
std::string usage_chunk(int in, int out) {
  json c = {
      {"id", "chatcmpl-1"}, {"object", "chat.completion.chunk"}, {"choices", json::array()}, {"usage", usage(in, out)}};
  return "data: " + c.dump() + "\n\n";
}
std::string args_fragment(int index, const std::string& piece) {
  return chunk({{"tool_calls", {{{"index", index}, {"function", {{"arguments", piece}}}}}}});
}
std::string call_start(int index, const std::string& id, const std::string& name) {
  return chunk(
      {{"tool_calls",
        {{{"index", index}, {"id", id}, {"type", "function"}, {"function", {{"name", name}, {"arguments", ""}}}}}}});
}

// Streams `events` as a chunked SSE body, each event cut in two writes (mid-line) so the parser
// must join partial lines.
void stream_events(httplib::Response& res, std::vector<std::string> events) {
  res.set_chunked_content_provider("text/event-stream", [events](size_t, httplib::DataSink& sink) {
    for (const std::string& e : events) {
      size_t half = e.size() / 2;
      sink.write(e.data(), half);
      sink.write(e.data() + half, e.size() - half);
    }
    sink.done();
    return true;
  });
}

Message msg(Role role, const std::string& content) {
  Message m;
  m.role = role;
  m.content = content;
  return m;
}

ChatRequest say_hi() {
  ChatRequest r;
  r.messages.push_back(msg(Role::user, "Hi"));
  return r;
}

ChatRequest request_with_tools() {
  ChatRequest r;
  r.messages.push_back(msg(Role::system, "You write CUDA kernels."));
  r.messages.push_back(msg(Role::user, "Read a.txt"));
  r.tools.push_back({"read_file",
                     "Read a file of the workspace.",
                     {{"type", "object"}, {"properties", {{"path", {{"type", "string"}}}}}, {"required", {"path"}}}});
  r.max_tokens = 1000;
  r.temperature = 0.25;
  return r;
}

// The message of the kagent::Error a call throws, and its code.
struct Thrown {
  ExitCode code = ExitCode::ok;
  std::string what;
};
Thrown thrown_by(Provider& provider, const ChatRequest& request) {
  try {
    provider.chat(request);
  } catch (const Error& e) {
    return {e.code(), e.what()};
  }
  ADD_FAILURE() << "chat() did not throw kagent::Error";
  return {};
}

// ---------------------------------------------------------------------------------------------

TEST(OpenAiChat, NonStreamedToolCallSendsTheRequestAndParsesTheCall) {
  MockServer server;
  Received received;
  server.http().Post(kPath, [&](const httplib::Request& req, httplib::Response& res) {
    received.add(req);
    json message = {{"role", "assistant"},
                    {"content", nullptr},
                    {"tool_calls", json::array({tool_call("call_1", "read_file", R"({"path": "a.txt"})")})}};
    res.set_content(completion(message, "tool_calls").dump(), "application/json");
  });
  server.start();

  ChatRequest request = request_with_tools();
  // An earlier round: the assistant's call and the tool's result go back to the server too.
  Message earlier = msg(Role::assistant, "");
  earlier.tool_calls.push_back({"call_0", "read_file", {{"path", "b.txt"}}, "", ""});
  request.messages.push_back(earlier);
  Message result = msg(Role::tool, "contents of b");
  result.tool_call_id = "call_0";
  result.tool_name = "read_file";
  request.messages.push_back(result);

  auto provider = make_provider(config_for(server, /*stream=*/false));
  EXPECT_EQ(provider->name(), "openai");
  ChatResponse res = provider->chat(request);

  ASSERT_EQ(received.bodies.size(), 1u);
  const json& body = received.bodies[0];
  EXPECT_EQ(body["model"], "test-model");
  EXPECT_FALSE(body.value("stream", false));
  EXPECT_EQ(body["max_tokens"], 1000);
  EXPECT_DOUBLE_EQ(body["temperature"].get<double>(), 0.25);
  ASSERT_EQ(body["messages"].size(), 4u);
  EXPECT_EQ(body["messages"][0], json({{"role", "system"}, {"content", "You write CUDA kernels."}}));
  EXPECT_EQ(body["messages"][1], json({{"role", "user"}, {"content", "Read a.txt"}}));
  const json& assistant = body["messages"][2];
  EXPECT_EQ(assistant["role"], "assistant");
  EXPECT_TRUE(assistant["content"].is_null());
  EXPECT_EQ(assistant["tool_calls"][0]["id"], "call_0");
  EXPECT_EQ(assistant["tool_calls"][0]["type"], "function");
  EXPECT_EQ(assistant["tool_calls"][0]["function"]["name"], "read_file");
  ASSERT_TRUE(assistant["tool_calls"][0]["function"]["arguments"].is_string());
  EXPECT_EQ(json::parse(assistant["tool_calls"][0]["function"]["arguments"].get<std::string>()),
            json({{"path", "b.txt"}}));
  EXPECT_EQ(body["messages"][3], json({{"role", "tool"}, {"tool_call_id", "call_0"}, {"content", "contents of b"}}));
  ASSERT_EQ(body["tools"].size(), 1u);
  EXPECT_EQ(body["tools"][0]["type"], "function");
  EXPECT_EQ(body["tools"][0]["function"]["name"], "read_file");
  EXPECT_EQ(body["tools"][0]["function"]["description"], "Read a file of the workspace.");
  EXPECT_EQ(body["tools"][0]["function"]["parameters"]["required"], json({"path"}));
  EXPECT_EQ(body["tool_choice"], "auto");
  EXPECT_EQ(received.header(0, "Authorization"), "Bearer " + kKey);
  EXPECT_EQ(received.header(0, "Content-Type"), "application/json");

  EXPECT_EQ(res.message.role, Role::assistant);
  EXPECT_EQ(res.message.content, "");
  ASSERT_EQ(res.message.tool_calls.size(), 1u);
  const ToolCall& call = res.message.tool_calls[0];
  EXPECT_EQ(call.id, "call_1");
  EXPECT_EQ(call.name, "read_file");
  EXPECT_EQ(call.arguments, json({{"path", "a.txt"}}));
  EXPECT_EQ(call.raw_arguments, R"({"path": "a.txt"})");
  EXPECT_EQ(call.arguments_error, "");
  EXPECT_EQ(res.stop_reason, "tool_use");
  EXPECT_EQ(res.usage.input_tokens, 12);
  EXPECT_EQ(res.usage.output_tokens, 7);
  EXPECT_EQ(res.attempts, 1);
  EXPECT_GT(res.latency_s, 0.0);
}

TEST(OpenAiChat, PlainTextAnswerWithoutKeyOrTools) {
  MockServer server;
  Received received;
  server.http().Post(kPath, [&](const httplib::Request& req, httplib::Response& res) {
    received.add(req);
    res.set_content(completion({{"role", "assistant"}, {"content", "Hello there."}}, "stop").dump(),
                    "application/json");
  });
  server.start();
  LlmConfig config = config_for(server, /*stream=*/false);
  config.api_key.clear();  // local servers need none: no Authorization header at all

  ChatRequest request = say_hi();
  ChatResponse res = make_provider(config)->chat(request);

  EXPECT_EQ(res.message.content, "Hello there.");
  EXPECT_TRUE(res.message.tool_calls.empty());
  EXPECT_EQ(res.stop_reason, "end_turn");
  ASSERT_EQ(received.bodies.size(), 1u);
  EXPECT_EQ(received.header(0, "Authorization"), "");
  EXPECT_FALSE(received.bodies[0].contains("tools"));
  EXPECT_FALSE(received.bodies[0].contains("tool_choice"));
  EXPECT_FALSE(received.bodies[0].contains("temperature"));
}

TEST(OpenAiChat, LengthAndUnknownFinishReasons) {
  MockServer server;
  int n = 0;
  server.http().Post(kPath, [&](const httplib::Request&, httplib::Response& res) {
    const char* reason = n++ == 0 ? "length" : "content_filter";
    res.set_content(completion({{"role", "assistant"}, {"content", "cut"}}, reason).dump(), "application/json");
  });
  server.start();
  auto provider = make_provider(config_for(server, /*stream=*/false));
  ChatRequest request = say_hi();
  EXPECT_EQ(provider->chat(request).stop_reason, "max_tokens");
  EXPECT_EQ(provider->chat(request).stop_reason, "content_filter");
}

// ---------------------------------------------------------------------------------------------

TEST(OpenAiStream, ToolCallSplitOverManyChunksIsJoined) {
  MockServer server;
  Received received;
  server.http().Post(kPath, [&](const httplib::Request& req, httplib::Response& res) {
    received.add(req);
    stream_events(res, {
                           chunk({{"role", "assistant"}, {"content", ""}}),
                           chunk({{"content", "Let me "}}),
                           chunk({{"content", "look."}}),
                           call_start(0, "call_abc", "read_file"),
                           args_fragment(0, R"({"pa)"),
                           args_fragment(0, R"(th": "sr)"),
                           args_fragment(0, R"(c/a.cu", "lim)"),
                           args_fragment(0, R"(it": 1)"),
                           args_fragment(0, R"(0})"),
                           chunk(json::object(), "tool_calls"),
                           usage_chunk(30, 11),
                           "data: [DONE]\n\n",
                       });
  });
  server.start();

  ChatResponse res = make_provider(config_for(server, /*stream=*/true))->chat(request_with_tools());

  ASSERT_EQ(received.bodies.size(), 1u);
  EXPECT_EQ(received.bodies[0]["stream"], true);
  EXPECT_EQ(received.bodies[0]["stream_options"], json({{"include_usage", true}}));
  EXPECT_EQ(received.header(0, "Accept"), "text/event-stream");
  EXPECT_EQ(res.message.content, "Let me look.");
  ASSERT_EQ(res.message.tool_calls.size(), 1u);
  const ToolCall& call = res.message.tool_calls[0];
  EXPECT_EQ(call.id, "call_abc");
  EXPECT_EQ(call.name, "read_file");
  EXPECT_EQ(call.raw_arguments, R"({"path": "src/a.cu", "limit": 10})");
  EXPECT_EQ(call.arguments, json({{"path", "src/a.cu"}, {"limit", 10}}));
  EXPECT_EQ(call.arguments_error, "");
  EXPECT_EQ(res.stop_reason, "tool_use");
  EXPECT_EQ(res.usage.input_tokens, 30);
  EXPECT_EQ(res.usage.output_tokens, 11);
}

TEST(OpenAiStream, TwoParallelToolCallsInterleaved) {
  MockServer server;
  server.http().Post(kPath, [&](const httplib::Request&, httplib::Response& res) {
    stream_events(res, {
                           call_start(0, "call_a", "read_file"),
                           call_start(1, "call_b", "list_dir"),
                           args_fragment(1, R"({"dir")"),
                           args_fragment(0, R"({"path")"),
                           args_fragment(0, R"(: "x.cu"})"),
                           args_fragment(1, R"(: "src"})"),
                           chunk(json::object(), "tool_calls"),
                           usage_chunk(5, 6),
                           "data: [DONE]\n\n",
                       });
  });
  server.start();

  ChatResponse res = make_provider(config_for(server, /*stream=*/true))->chat(request_with_tools());

  ASSERT_EQ(res.message.tool_calls.size(), 2u);
  EXPECT_EQ(res.message.tool_calls[0].id, "call_a");
  EXPECT_EQ(res.message.tool_calls[0].name, "read_file");
  EXPECT_EQ(res.message.tool_calls[0].arguments, json({{"path", "x.cu"}}));
  EXPECT_EQ(res.message.tool_calls[1].id, "call_b");
  EXPECT_EQ(res.message.tool_calls[1].name, "list_dir");
  EXPECT_EQ(res.message.tool_calls[1].arguments, json({{"dir", "src"}}));
  EXPECT_EQ(res.stop_reason, "tool_use");
}

TEST(OpenAiStream, CutStreamFallsBackToOnePlainRequestAndStopsStreaming) {
  MockServer server;
  Received received;
  server.http().Post(kPath, [&](const httplib::Request& req, httplib::Response& res) {
    if (!is_stream_request(received.add(req))) {
      res.set_content(completion({{"role", "assistant"}, {"content", "plain answer"}}, "stop").dump(),
                      "application/json");
      return;
    }
    // Half an answer, then the connection closes without the last chunk of the body.
    std::string half =
        chunk({{"content", "partial "}}) + call_start(0, "call_x", "read_file") + args_fragment(0, R"({"pa)");
    res.set_chunked_content_provider("text/event-stream", [half](size_t, httplib::DataSink& sink) {
      sink.write(half.data(), half.size());
      return false;
    });
  });
  server.start();
  test::LogCapture log;
  auto provider = make_provider(config_for(server, /*stream=*/true));
  ChatRequest request = say_hi();

  ChatResponse first = provider->chat(request);
  EXPECT_EQ(first.message.content, "plain answer");
  EXPECT_TRUE(first.message.tool_calls.empty());
  EXPECT_EQ(first.stop_reason, "end_turn");
  EXPECT_EQ(received.count(/*streamed=*/true), 1u)
      << "a stream cut after data is not retried: the fallback follows at once";
  EXPECT_EQ(received.count(/*streamed=*/false), 1u);

  const size_t streamed = received.count(/*streamed=*/true);
  ChatResponse second = provider->chat(request);
  EXPECT_EQ(second.message.content, "plain answer");
  EXPECT_EQ(received.count(/*streamed=*/true), streamed);  // no second try at streaming
  EXPECT_EQ(received.count(/*streamed=*/false), 2u);
  EXPECT_EQ(log.text().find(kKey), std::string::npos) << log.text();
}

TEST(OpenAiStream, JsonBodyToAStreamRequestFallsBack) {
  MockServer server;
  Received received;
  server.http().Post(kPath, [&](const httplib::Request& req, httplib::Response& res) {
    bool streamed = is_stream_request(received.add(req));
    // A server that ignores "stream": the same JSON either way, but only the plain request's counts.
    res.set_content(
        completion({{"role", "assistant"}, {"content", streamed ? "ignored" : "from plain"}}, "stop").dump(),
        "application/json");
  });
  server.start();
  test::LogCapture log;
  ChatRequest request = say_hi();
  ChatResponse res = make_provider(config_for(server, /*stream=*/true))->chat(request);
  EXPECT_EQ(res.message.content, "from plain");
  EXPECT_EQ(received.count(/*streamed=*/true), 1u);
  EXPECT_EQ(received.count(/*streamed=*/false), 1u);
  EXPECT_EQ(res.attempts, 2);  // the stream's attempt and the plain one
}

TEST(OpenAiStream, ChunkThatIsNotJsonFallsBack) {
  MockServer server;
  Received received;
  server.http().Post(kPath, [&](const httplib::Request& req, httplib::Response& res) {
    if (!is_stream_request(received.add(req))) {
      res.set_content(completion({{"role", "assistant"}, {"content", "plain"}}, "stop").dump(), "application/json");
      return;
    }
    stream_events(
        res, {chunk({{"content", "a"}}), "data: {not json\n\n", chunk(json::object(), "stop"), "data: [DONE]\n\n"});
  });
  server.start();
  test::LogCapture log;
  ChatRequest request = say_hi();
  ChatResponse res = make_provider(config_for(server, /*stream=*/true))->chat(request);
  EXPECT_EQ(res.message.content, "plain");
  EXPECT_EQ(received.count(/*streamed=*/true), 1u);
  EXPECT_EQ(received.count(/*streamed=*/false), 1u);
}

TEST(OpenAiStream, FinishReasonWithoutDoneIsComplete) {
  MockServer server;
  Received received;
  server.http().Post(kPath, [&](const httplib::Request& req, httplib::Response& res) {
    received.add(req);
    // Some servers close the stream after the last chunk without "data: [DONE]"; and some omit
    // the tool call's index (each fragment continues the call whose id came last).
    auto fragment = [](const json& f) { return chunk({{"tool_calls", json::array({f})}}); };
    stream_events(res, {fragment({{"id", "call_q"}, {"function", {{"name", "list_dir"}}}}),
                        fragment({{"function", {{"arguments", R"({"dir": )"}}}}),
                        fragment({{"function", {{"arguments", R"("src"})"}}}}), chunk(json::object(), "tool_calls")});
  });
  server.start();
  ChatResponse res = make_provider(config_for(server, /*stream=*/true))->chat(request_with_tools());
  EXPECT_EQ(received.count(/*streamed=*/false), 0u);
  ASSERT_EQ(res.message.tool_calls.size(), 1u);
  EXPECT_EQ(res.message.tool_calls[0].id, "call_q");
  EXPECT_EQ(res.message.tool_calls[0].arguments, json({{"dir", "src"}}));
  EXPECT_EQ(res.stop_reason, "tool_use");
}

// ---------------------------------------------------------------------------------------------
// Quirks of compatible servers.

// Serves one non-streamed answer with `calls` and returns the parsed calls.
std::vector<ToolCall> calls_served(const json& calls) {
  MockServer server;
  server.http().Post(kPath, [&](const httplib::Request&, httplib::Response& res) {
    json message = {{"role", "assistant"}, {"content", ""}, {"tool_calls", calls}};
    res.set_content(completion(message, "tool_calls").dump(), "application/json");
  });
  server.start();
  return make_provider(config_for(server, /*stream=*/false))->chat(request_with_tools()).message.tool_calls;
}

TEST(OpenAiQuirks, ArgumentsAsAnObject) {
  json args = {{"path", "a.txt"}, {"n", 3}};
  auto calls = calls_served(json::array({tool_call("call_1", "read_file", args)}));
  ASSERT_EQ(calls.size(), 1u);
  EXPECT_EQ(calls[0].arguments, args);
  EXPECT_EQ(calls[0].raw_arguments, args.dump());
  EXPECT_EQ(calls[0].arguments_error, "");
}

TEST(OpenAiQuirks, MissingOrEmptyIdsAreGenerated) {
  auto calls = calls_served(
      {tool_call("", "read_file", R"({"path": "a"})"), tool_call("call_1", "read_file", R"({"path": "b"})")});
  ASSERT_EQ(calls.size(), 2u);
  EXPECT_EQ(calls[0].id.rfind("call_kagent_", 0), 0u) << calls[0].id;
  EXPECT_EQ(calls[1].id, "call_1");

  json empty_id = tool_call("", "read_file", R"({"path": "c"})");
  empty_id["id"] = "";
  auto more = calls_served({empty_id, tool_call("", "read_file", "{}")});
  ASSERT_EQ(more.size(), 2u);
  EXPECT_EQ(more[0].id.rfind("call_kagent_", 0), 0u) << more[0].id;
  EXPECT_NE(more[0].id, more[1].id);
  EXPECT_NE(more[0].id, calls[0].id);
}

TEST(OpenAiQuirks, InvalidArgumentsAreAnArgumentsErrorNotAnException) {
  auto calls = calls_served({tool_call("call_1", "read_file", R"({"path": "a.txt)"),
                             tool_call("call_2", "list_dir", ""), tool_call("call_3", "read_file", "[1, 2]")});
  ASSERT_EQ(calls.size(), 3u);
  EXPECT_TRUE(calls[0].arguments.is_null());
  EXPECT_EQ(calls[0].raw_arguments, R"({"path": "a.txt)");
  EXPECT_NE(calls[0].arguments_error.find("read_file"), std::string::npos) << calls[0].arguments_error;
  EXPECT_EQ(calls[0].arguments_error.find('\n'), std::string::npos);
  // No arguments at all is an empty object, not an error.
  EXPECT_EQ(calls[1].arguments, json::object());
  EXPECT_EQ(calls[1].arguments_error, "");
  // JSON, but not an object: the model's mistake too.
  EXPECT_TRUE(calls[2].arguments.is_null());
  EXPECT_NE(calls[2].arguments_error, "");
}

// ---------------------------------------------------------------------------------------------
// Errors.

TEST(OpenAiErrors, MalformedBodyWith200IsAnEnvironmentError) {
  MockServer server;
  int n = 0;
  server.http().Post(kPath, [&](const httplib::Request&, httplib::Response& res) {
    // A proxy echoing the key must not get it into the message.
    if (n++ == 0)
      res.set_content("{\"choices\": [ <html>oops " + kKey + std::string(300, 'x'), "application/json");
    else
      res.set_content(R"({"object": "chat.completion", "choices": []})", "application/json");
  });
  server.start();
  auto provider = make_provider(config_for(server, /*stream=*/false));
  ChatRequest request = say_hi();

  Thrown bad_json = thrown_by(*provider, request);
  EXPECT_EQ(bad_json.code, ExitCode::environment);
  EXPECT_NE(bad_json.what.find(kPath), std::string::npos) << bad_json.what;
  EXPECT_NE(bad_json.what.find("oops"), std::string::npos) << bad_json.what;
  EXPECT_EQ(bad_json.what.find(kKey), std::string::npos) << bad_json.what;
  EXPECT_LT(bad_json.what.size(), 400u) << bad_json.what;

  Thrown no_choices = thrown_by(*provider, request);
  EXPECT_EQ(no_choices.code, ExitCode::environment);
  EXPECT_NE(no_choices.what.find("choices"), std::string::npos) << no_choices.what;
}

TEST(OpenAiErrors, RateLimitedThenSuccess) {
  MockServer server;
  Received received;
  server.http().Post(kPath, [&](const httplib::Request& req, httplib::Response& res) {
    received.add(req);
    if (received.count(/*streamed=*/true) == 1) {
      res.status = 429;
      res.set_header("Retry-After", "0");
      res.set_content(R"({"error": {"message": "Rate limit reached", "type": "requests"}})", "application/json");
      return;
    }
    stream_events(res, {chunk({{"content", "after the wait"}}), chunk(json::object(), "stop"), usage_chunk(3, 4),
                        "data: [DONE]\n\n"});
  });
  server.start();
  ChatRequest request = say_hi();
  ChatResponse res = make_provider(config_for(server, /*stream=*/true))->chat(request);
  EXPECT_EQ(res.message.content, "after the wait");
  EXPECT_EQ(res.stop_reason, "end_turn");
  EXPECT_EQ(res.usage.output_tokens, 4);
  EXPECT_EQ(res.attempts, 2);
  EXPECT_EQ(received.count(/*streamed=*/true), 2u);
  EXPECT_EQ(received.count(/*streamed=*/false), 0u);
}

TEST(OpenAiErrors, UnauthorizedIsAnEnvironmentErrorWithoutTheKey) {
  MockServer server;
  server.http().Post(kPath, [&](const httplib::Request&, httplib::Response& res) {
    res.status = 401;
    res.set_content(
        json{{"error", {{"message", "Incorrect API key provided: " + kKey}, {"code", "invalid_api_key"}}}}.dump(),
        "application/json");
  });
  server.start();
  test::LogCapture log;
  for (bool stream : {false, true}) {
    auto provider = make_provider(config_for(server, stream));
    ChatRequest request = say_hi();
    Thrown e = thrown_by(*provider, request);
    EXPECT_EQ(e.code, ExitCode::environment);
    EXPECT_NE(e.what.find("401"), std::string::npos) << e.what;
    EXPECT_EQ(e.what.find(kKey), std::string::npos) << e.what;
  }
  EXPECT_EQ(log.text().find(kKey), std::string::npos) << log.text();
}

TEST(OpenAiErrors, NotFoundIsBadInput) {
  MockServer server;
  server.http().Post(kPath, [&](const httplib::Request&, httplib::Response& res) {
    res.status = 404;
    res.set_content(R"({"error": {"message": "The model `test-model` does not exist", "code": "model_not_found"}})",
                    "application/json");
  });
  server.start();
  ChatRequest request = say_hi();
  Thrown e = thrown_by(*make_provider(config_for(server, /*stream=*/true)), request);
  EXPECT_EQ(e.code, ExitCode::bad_input);
  EXPECT_NE(e.what.find("does not exist"), std::string::npos) << e.what;
}

// A hostile endpoint (issue 16): token counts of 1e300 were converted to int64 (UB) and summed
// (overflow); tool-call arguments nested 10^4 deep recursed off the stack.
TEST(OpenAiChat, HugeUsageSaturatesAndDeepArgumentsAreTheModelsError) {
  MockServer server;
  const std::string deep = std::string(10000, '[') + std::string(10000, ']');
  server.http().Post(kPath, [&](const httplib::Request&, httplib::Response& res) {
    json message = {{"role", "assistant"},
                    {"content", nullptr},
                    {"tool_calls", json::array({tool_call("call_1", "read_file", R"({"path": )" + deep + "}")})}};
    json u = {{"prompt_tokens", 1e300}, {"completion_tokens", -5}};
    res.set_content(completion(message, "tool_calls", u).dump(), "application/json");
  });
  server.start();
  ChatResponse res = make_provider(config_for(server, /*stream=*/false))->chat(request_with_tools());
  EXPECT_EQ(res.usage.input_tokens, int64_t{1} << 53);
  EXPECT_EQ(res.usage.output_tokens, 0);
  Usage total = res.usage;
  for (int i = 0; i < 2000; ++i) total += res.usage;  // saturates, never wraps
  EXPECT_GT(total.input_tokens, 0);
  ASSERT_EQ(res.message.tool_calls.size(), 1u);
  EXPECT_NE(res.message.tool_calls[0].arguments_error.find("nested deeper"), std::string::npos)
      << res.message.tool_calls[0].arguments_error;
}

}  // namespace
}  // namespace kagent::llm
