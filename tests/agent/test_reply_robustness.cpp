// The agent loop against mock endpoints that send what no well-behaved server sends, and tools
// whose output is not text: bytes that are not UTF-8 in a tool result or in the model's reply
// (`cat` of a binary file ended a run with nlohmann's type_error 316), a stream without end, a
// stream of keep-alive comments outliving the time budget, a reply with 1000 tool calls. Each
// runs the real loop (agent::Agent) with the real providers over HTTP on 127.0.0.1.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "../llm/mock_server.hpp"
#include "kagent/agent/agent.hpp"
#include "kagent/agent/transcript.hpp"
#include "kagent/common/error.hpp"
#include "kagent/common/utf8.hpp"
#include "kagent/llm/provider.hpp"
#include "kagent/model_tools/file_tools.hpp"
#include "kagent/model_tools/shell_tool.hpp"
#include "test_util.hpp"

using namespace kagent;
using namespace std::chrono_literals;
using json = nlohmann::json;

namespace {

using Clock = std::chrono::steady_clock;

const std::string kFffd = "\xEF\xBF\xBD";
// The bytes of the report: a lone continuation byte, a byte that is never UTF-8, a 2-byte form cut
// short, and (in the file, past read_file's binary probe) a NUL.
const std::string kBadBytes = "\x80\xFF\xC3";

// An endpoint (OpenAI's /v1/chat/completions or Anthropic's /v1/messages) whose answer to the k-th
// request (0-based) `reply` writes. A request body that is not JSON (not UTF-8, say) is kept as
// null and answered with 400.
class Endpoint {
 public:
  using Reply = std::function<void(size_t k, const json& body, httplib::Response& res)>;
  Endpoint(const std::string& path, Reply reply) : reply_(std::move(reply)) {
    server_.http().Post(path, [this](const httplib::Request& req, httplib::Response& res) {
      json body;
      try {
        body = json::parse(req.body);
      } catch (const json::exception&) {
        body = nullptr;
      }
      size_t k = 0;
      {
        std::lock_guard<std::mutex> lock(mu_);
        k = requests_.size();
        requests_.push_back(body);
      }
      if (body.is_null()) {
        res.status = 400;
        res.set_content(R"({"error": {"message": "the body is not JSON"}})", "application/json");
        return;
      }
      reply_(k, body, res);
    });
    server_.start();
  }
  ~Endpoint() {
    released = true;
    server_.stop();
  }
  std::string url(const std::string& path = "") const { return server_.url(path); }
  std::vector<json> requests() {
    std::lock_guard<std::mutex> lock(mu_);
    return requests_;
  }
  std::atomic<bool> released{false};  // handlers that stream stop once the test is over

 private:
  Reply reply_;
  test::MockServer server_;
  std::mutex mu_;
  std::vector<json> requests_;
};

llm::LlmConfig config(llm::ProviderKind kind, const std::string& base_url, bool stream = false) {
  llm::LlmConfig c;
  c.provider = kind;
  c.base_url = base_url;
  c.model = "mock";
  c.stream = stream;
  c.http.max_attempts = 1;
  c.http.idle_timeout = 60s;
  return c;
}

// One run of the loop in a fresh folder: the file tools, and the shell where a sandbox works.
struct Loop {
  test::TempDir dir;
  model_tools::Workspace ws{dir.path() / "ws"};
  model_tools::ToolSet tools = model_tools::make_file_tools(ws);
  bool shell = false;

  void add_shell() {
    model_tools::ShellSandbox sb = model_tools::probe_shell_sandbox();
    if (auto t = model_tools::make_shell_tool(ws, sb)) {
      tools.push_back(std::move(t));
      shell = true;
    }
  }
  agent::RunResult run(const llm::LlmConfig& c, agent::AgentOptions opt) {
    auto provider = llm::make_provider(c);
    agent::Transcript transcript(dir.path() / "transcript.jsonl");
    agent::RunRecord record(dir.path(), transcript);
    agent::Agent ag(*provider, tools, transcript, record, opt);
    agent::RunState state;
    state.messages.push_back({llm::Role::user, "go", {}, "", "", false});
    return ag.run(state);
  }
  std::vector<json> transcript() const { return agent::Transcript::read(dir.path() / "transcript.jsonl"); }
};

// ---------------------------------------------------------------------------------------------
// Replies in each wire format. `text` may hold any bytes: it is spliced into the JSON text raw,
// as a server that sends invalid UTF-8 does.

std::string with_raw_text(json body, const std::string& text) {
  std::string out = body.dump();
  const size_t at = out.find("@TEXT@");
  if (at != std::string::npos) out.replace(at, 6, text);
  return out;
}

struct Call {
  std::string id, name;
  json arguments;
};

std::string openai_reply(const std::vector<Call>& calls, const std::string& text = "") {
  json message = {{"role", "assistant"}, {"content", text.empty() ? json(nullptr) : json("@TEXT@")}};
  if (!calls.empty()) {
    json list = json::array();
    for (const Call& c : calls)
      list.push_back(
          {{"id", c.id}, {"type", "function"}, {"function", {{"name", c.name}, {"arguments", c.arguments.dump()}}}});
    message["tool_calls"] = list;
  }
  json r = {
      {"choices", {{{"index", 0}, {"message", message}, {"finish_reason", calls.empty() ? "stop" : "tool_calls"}}}},
      {"usage", {{"prompt_tokens", 100}, {"completion_tokens", 10}}}};
  return with_raw_text(r, text);
}

std::string anthropic_reply(const std::vector<Call>& calls, const std::string& text = "") {
  json content = json::array();
  if (!text.empty()) content.push_back({{"type", "text"}, {"text", "@TEXT@"}});
  for (const Call& c : calls)
    content.push_back({{"type", "tool_use"}, {"id", c.id}, {"name", c.name}, {"input", c.arguments}});
  json r = {{"content", content},
            {"stop_reason", calls.empty() ? "end_turn" : "tool_use"},
            {"usage", {{"input_tokens", 100}, {"output_tokens", 10}}}};
  return with_raw_text(r, text);
}

// The tool results of a request, in order, whatever the wire format: {id, content}.
std::vector<std::pair<std::string, std::string>> tool_results(const json& request) {
  std::vector<std::pair<std::string, std::string>> out;
  for (const json& m : request.value("messages", json::array())) {
    if (m.value("role", "") == "tool") out.emplace_back(m.value("tool_call_id", ""), m.value("content", ""));
    if (m.value("role", "") == "user" && m["content"].is_array())
      for (const json& b : m["content"])
        if (b.value("type", "") == "tool_result") out.emplace_back(b.value("tool_use_id", ""), b.value("content", ""));
  }
  return out;
}

// The text of the last assistant message of a request, whatever the wire format.
std::string last_assistant_text(const json& request) {
  std::string text;
  for (const json& m : request.value("messages", json::array())) {
    if (m.value("role", "") != "assistant") continue;
    text.clear();
    if (m["content"].is_string()) text = m["content"];
    if (m["content"].is_array())
      for (const json& b : m["content"])
        if (b.value("type", "") == "text") text += b.value("text", "");
  }
  return text;
}

// ---------------------------------------------------------------------------------------------
// Item: bytes that are not UTF-8.

class InvalidUtf8 : public ::testing::TestWithParam<llm::ProviderKind> {};

// read_file (and the shell's `cat`, where a sandbox works) of a file with 0x80 0xFF 0xC3 and a NUL;
// then a reply whose text has bytes that are not UTF-8. The run goes on to its turn budget; the
// model reads U+FFFD where the bytes were (the rest of the file as it is), and so does the
// transcript.
TEST_P(InvalidUtf8, ToolResultsAndRepliesWithBadBytesDoNotEndTheRun) {
  const bool anthropic = GetParam() == llm::ProviderKind::anthropic;
  Loop loop;
  loop.add_shell();
  // The NUL lies past read_file's binary probe (8 KiB), so read_file reads it too.
  std::string lines;
  for (int i = 0; i < 170; ++i) lines += std::string(49, 'x') + "\n";
  const std::string blob =
      "head " + kBadBytes + " tail\n" + lines + std::string(1, '\0') + "after-nul " + kBadBytes + "\n";
  loop.dir.write("ws/blob.bin", blob);
  std::vector<Call> calls = {{"call_read", "read_file", {{"path", "blob.bin"}}}};
  if (loop.shell)
    calls.push_back({"call_cat", "shell", {{"command", "cat blob.bin"}}});
  else
    std::printf("no shell sandbox here: read_file only\n");
  const std::string bad_reply = "I read it: " + kBadBytes + " and \xED\xA0\x80 (a surrogate)";

  Endpoint e(anthropic ? "/v1/messages" : "/v1/chat/completions", [&](size_t k, const json&, httplib::Response& res) {
    const std::vector<Call> none;
    const std::string body = k == 0   ? (anthropic ? anthropic_reply(calls) : openai_reply(calls))
                             : k == 1 ? (anthropic ? anthropic_reply(none, bad_reply) : openai_reply(none, bad_reply))
                                      : (anthropic ? anthropic_reply(none, "fine") : openai_reply(none, "fine"));
    res.set_content(body, "application/json");
  });
  agent::AgentOptions opt;
  opt.max_turns = 3;
  agent::RunResult res = loop.run(config(GetParam(), e.url(anthropic ? "" : "/v1")), opt);
  EXPECT_EQ(res.stop_reason, "turn budget");
  EXPECT_EQ(res.turns, 3);

  auto requests = e.requests();
  ASSERT_EQ(requests.size(), 3u);
  for (const json& r : requests) ASSERT_FALSE(r.is_null()) << "every request body was JSON (valid UTF-8)";
  auto results = tool_results(requests[1]);
  ASSERT_EQ(results.size(), calls.size());
  for (const auto& [id, content] : results) {
    SCOPED_TRACE(id);
    EXPECT_TRUE(is_valid_utf8(content));
    EXPECT_NE(content.find("head " + kFffd + kFffd + kFffd + " tail"), std::string::npos) << content.substr(0, 200);
    EXPECT_NE(content.find("after-nul " + kFffd + kFffd + kFffd), std::string::npos);
    EXPECT_NE(content.find(std::string(1, '\0') + "after-nul"), std::string::npos) << "NUL is valid UTF-8: kept";
    size_t whole_lines = 0;  // read_file numbers lines; the shell does not
    for (size_t at = content.find(std::string(49, 'x')); at != std::string::npos;
         at = content.find(std::string(49, 'x'), at + 49))
      ++whole_lines;
    EXPECT_EQ(whole_lines, 170u) << "the rest of the file as it is";
  }
  // The model's own bytes: one U+FFFD each (the surrogate's three bytes three), in the next request.
  EXPECT_EQ(last_assistant_text(requests[2]),
            "I read it: " + kFffd + kFffd + kFffd + " and " + kFffd + kFffd + kFffd + " (a surrogate)");

  // The transcript has the same text (and reads back).
  size_t tool_events = 0;
  for (const json& ev : loop.transcript()) {
    if (ev.value("type", "") != "message") continue;
    const json& m = ev["message"];
    if (m["role"] == "tool") {
      ++tool_events;
      EXPECT_NE(m["content"].get<std::string>().find("head " + kFffd), std::string::npos);
    }
  }
  EXPECT_EQ(tool_events, calls.size());
}

INSTANTIATE_TEST_SUITE_P(Providers, InvalidUtf8,
                         ::testing::Values(llm::ProviderKind::openai, llm::ProviderKind::anthropic),
                         [](const auto& info) { return std::string(llm::provider_name(info.param)); });

// Streamed (OpenAI), a chunk of the model's text with bytes that are not UTF-8 is read, not
// taken for a broken stream.
TEST(InvalidUtf8Stream, BadBytesInAStreamedReplyAreReplaced) {
  Loop loop;
  Endpoint e("/v1/chat/completions", [](size_t, const json&, httplib::Response& res) {
    const std::string chunk =
        with_raw_text({{"choices", {{{"index", 0}, {"delta", {{"content", "@TEXT@"}}}, {"finish_reason", "stop"}}}}},
                      "ok " + kBadBytes);
    const std::string body = "data: " + chunk + "\n\ndata: [DONE]\n\n";
    res.set_content(body, "text/event-stream");
  });
  agent::AgentOptions opt;
  opt.max_turns = 2;
  agent::RunResult res = loop.run(config(llm::ProviderKind::openai, e.url("/v1"), true), opt);
  EXPECT_EQ(res.stop_reason, "turn budget");
  auto requests = e.requests();
  ASSERT_EQ(requests.size(), 2u);
  EXPECT_TRUE(requests[1].value("stream", false)) << "the stream was not given up for a plain request";
  EXPECT_EQ(last_assistant_text(requests[1]), "ok " + kFffd + kFffd + kFffd);
}

// ---------------------------------------------------------------------------------------------
// Item: limits on one reply.

// A stream without end is abandoned at max_reply_bytes: the turn fails as an endpoint error does
// (exit 3, in the transcript), once: no retry, and no second, plain request for the same reply.
TEST(ReplyLimits, EndlessStreamIsAbandonedAtTheByteBound) {
  Loop loop;
  std::atomic<size_t> sent{0};
  Endpoint* endpoint = nullptr;
  Endpoint e("/v1/chat/completions", [&](size_t, const json&, httplib::Response& res) {
    res.set_chunked_content_provider("text/event-stream", [&](size_t, httplib::DataSink& sink) {
      const std::string event =
          "data: " + json{{"choices", {{{"index", 0}, {"delta", {{"content", std::string(4000, 'a')}}}}}}}.dump() +
          "\n\n";
      for (int i = 0; i < 250000; ++i) {  // 1 GB at most: bounded, and far past the bound below
        if (endpoint->released || !sink.is_writable() || !sink.write(event.data(), event.size())) return false;
        sent += event.size();
      }
      sink.done();
      return true;
    });
  });
  endpoint = &e;
  llm::LlmConfig c = config(llm::ProviderKind::openai, e.url("/v1"), true);
  c.http.max_attempts = 3;
  c.http.max_reply_bytes = 1 << 20;
  agent::AgentOptions opt;
  opt.max_turns = 5;
  std::string error;
  int code = 0;
  try {
    loop.run(c, opt);
    ADD_FAILURE() << "the run went on";
  } catch (const Error& ex) {
    error = ex.what();
    code = static_cast<int>(ex.code());
  }
  EXPECT_EQ(code, 3);
  EXPECT_NE(error.find("exceeded the bound of 1048576 bytes"), std::string::npos) << error;
  EXPECT_NE(error.find("--max-reply-bytes"), std::string::npos) << error;
  EXPECT_EQ(e.requests().size(), 1u) << "neither retried nor asked again without streaming";
  bool recorded = false;
  for (const json& ev : loop.transcript())
    if (ev.value("type", "") == "endpoint_error")
      recorded = ev.value("message", "").find("exceeded") != std::string::npos;
  EXPECT_TRUE(recorded);
  e.released = true;
  EXPECT_LT(sent.load(), size_t{64} << 20) << "the client left near the bound, not at the server's 1 GB";
}

// Anthropic's replies are not streamed: the same bound on the body.
TEST(ReplyLimits, OversizedAnthropicReplyIsAbandoned) {
  Loop loop;
  Endpoint e("/v1/messages", [](size_t, const json&, httplib::Response& res) {
    res.set_content(anthropic_reply({}, std::string(4 << 20, 'z')), "application/json");
  });
  llm::LlmConfig c = config(llm::ProviderKind::anthropic, e.url());
  c.http.max_attempts = 3;
  c.http.max_reply_bytes = 1 << 20;
  agent::AgentOptions opt;
  opt.max_turns = 5;
  try {
    loop.run(c, opt);
    ADD_FAILURE() << "the run went on";
  } catch (const Error& ex) {
    EXPECT_NE(std::string(ex.what()).find("exceeded the bound of 1048576 bytes"), std::string::npos) << ex.what();
  }
  EXPECT_EQ(e.requests().size(), 1u);
}

// Keep-alive comments reset the idle timeout on every byte: a run with a 3 s budget went on for
// 50 s. The budget now cuts the request in flight, and the run stops with "time budget".
TEST(ReplyLimits, KeepAlivesDoNotHoldARunPastItsTimeBudget) {
  Loop loop;
  Endpoint* endpoint = nullptr;
  Endpoint e("/v1/chat/completions", [&](size_t, const json&, httplib::Response& res) {
    res.set_chunked_content_provider("text/event-stream", [&](size_t, httplib::DataSink& sink) {
      for (int i = 0; i < 1200; ++i) {  // a minute of pings at most
        if (endpoint->released || !sink.is_writable() || !sink.write(": ping\n\n", 8)) return false;
        std::this_thread::sleep_for(50ms);
      }
      sink.done();
      return true;
    });
  });
  endpoint = &e;
  agent::AgentOptions opt;
  opt.max_turns = 5;
  opt.max_minutes = 2.5 / 60;
  const auto start = Clock::now();
  agent::RunResult res = loop.run(config(llm::ProviderKind::openai, e.url("/v1"), true), opt);
  const double took = std::chrono::duration<double>(Clock::now() - start).count();
  EXPECT_EQ(res.stop_reason, "time budget");
  EXPECT_EQ(res.turns, 0);
  EXPECT_LT(took, 20.0) << "the pings would have lasted a minute";
  EXPECT_EQ(e.requests().size(), 1u) << "no plain request after the cut stream";
  bool stopped = false;
  for (const json& ev : loop.transcript())
    if (ev.value("type", "") == "stop") stopped = ev.value("reason", "") == "time budget";
  EXPECT_TRUE(stopped);
}

// One reply with 1000 tool calls: the first max_tool_calls run, every other call is answered
// with an error result saying it was not run and why, in the order of the calls.
TEST(ReplyLimits, ToolCallsPastTheLimitAreAnsweredNotRun) {
  Loop loop;
  loop.dir.write("ws/kernel.cu", "// empty\n");
  std::vector<Call> calls;
  for (int i = 0; i < 1000; ++i) calls.push_back({fmt::format("call_{}", i), "list_files", json::object()});
  Endpoint e("/v1/chat/completions", [&](size_t k, const json&, httplib::Response& res) {
    res.set_content(k == 0 ? openai_reply(calls) : openai_reply({}, "done"), "application/json");
  });
  agent::AgentOptions opt;
  opt.max_turns = 2;
  agent::RunResult res = loop.run(config(llm::ProviderKind::openai, e.url("/v1")), opt);
  EXPECT_EQ(res.stop_reason, "turn budget") << "not malformed calls: the run goes on";
  auto requests = e.requests();
  ASSERT_EQ(requests.size(), 2u);
  auto results = tool_results(requests[1]);
  ASSERT_EQ(results.size(), 1000u) << "every call id has a result";
  const int limit = agent::AgentOptions{}.max_tool_calls;
  EXPECT_EQ(limit, 32);
  for (int i = 0; i < 1000; ++i) {
    const auto& [id, content] = results[static_cast<size_t>(i)];
    ASSERT_EQ(id, fmt::format("call_{}", i));
    const bool refused = content.find("not run") != std::string::npos;
    ASSERT_EQ(refused, i >= limit) << i << ": " << content;
    if (i >= limit) {
      ASSERT_NE(content.find("made 1000 tool calls"), std::string::npos) << content;
      ASSERT_NE(content.find("only the first 32"), std::string::npos) << content;
    } else {
      ASSERT_NE(content.find("kernel.cu"), std::string::npos) << "list_files ran: " << content;
    }
  }
  // The transcript says which were not run (error results), as the model read them.
  size_t errors = 0;
  for (const json& ev : loop.transcript())
    if (ev.value("type", "") == "message" && ev["message"]["role"] == "tool")
      errors += ev["message"].value("is_error", false);
  EXPECT_EQ(errors, 1000u - 32u);
}

// ---------------------------------------------------------------------------------------------
// Item: tool calls written into the text by a model served without native tool calling.

TEST(TextToolCalls, CallsWrittenAsTextRunAndUnreadableOnesAreTold) {
  Loop loop;
  loop.dir.write("ws/kernel.cu", "// empty\n");
  const std::string first =
      "Let me look.\n<tool_call>\n{\"name\": \"read_file\", \"arguments\": {\"path\": \"kernel.cu\"}}\n"
      "</tool_call>\n<tool_call>{\"name\": \"list_files\", \"arguments\": {}}</tool_call>";
  const std::string second = "<tool_call>{\"arguments\": {\"path\": \"kernel.cu\"}}</tool_call>";
  Endpoint e("/v1/chat/completions", [&](size_t k, const json&, httplib::Response& res) {
    json text = k == 0 ? json(first) : k == 1 ? json(second) : json("done");
    res.set_content(openai_reply({}, text.dump().substr(1, text.dump().size() - 2)), "application/json");
  });
  agent::AgentOptions opt;
  opt.max_turns = 3;
  agent::RunResult res = loop.run(config(llm::ProviderKind::openai, e.url("/v1")), opt);
  EXPECT_EQ(res.stop_reason, "turn budget");
  auto requests = e.requests();
  ASSERT_EQ(requests.size(), 3u);
  // The second request carries the first reply as native calls, each answered by its tool.
  const json& m = requests[1]["messages"];
  json assistant;
  for (const json& x : m)
    if (x.value("role", "") == "assistant") assistant = x;
  ASSERT_TRUE(assistant.contains("tool_calls")) << assistant.dump();
  ASSERT_EQ(assistant["tool_calls"].size(), 2u);
  EXPECT_EQ(assistant["tool_calls"][0]["function"]["name"], "read_file");
  EXPECT_EQ(assistant["content"], "Let me look.");
  auto results = tool_results(requests[1]);
  ASSERT_EQ(results.size(), 2u);
  EXPECT_EQ(results[0].first, assistant["tool_calls"][0]["id"]);
  EXPECT_NE(results[0].second.find("// empty"), std::string::npos) << results[0].second;
  EXPECT_NE(results[1].second.find("kernel.cu"), std::string::npos) << results[1].second;
  // The unreadable call of the second reply: not run, and the model is told why and how to write one.
  const json& last = requests[2]["messages"].back();
  EXPECT_EQ(last.value("role", ""), "user");
  const std::string told = last.value("content", "");
  EXPECT_NE(told.find("tool call 1: no \"name\""), std::string::npos) << told;
  EXPECT_NE(told.find("<tool_call>"), std::string::npos) << told;
}

}  // namespace
