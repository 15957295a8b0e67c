// Runs that fit the model's context window. `kagent optimize` against a mock server that counts
// tokens as a real one would (bytes of the request's messages and tools over 3.5) and refuses, in
// its own words, a request whose input and max_tokens are over its window: a 32k window with long
// tool outputs lasts the whole turn budget with every request under the window; a refusal gets one
// compacted retry; a second refusal stops the run, resumable; an opening over the window is a clear
// error before any request. Also the budget's arithmetic and the compaction's steps.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <functional>
#include <mutex>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "../llm/mock_server.hpp"
#include "kagent/agent/agent_context.hpp"
#include "kagent/agent/transcript.hpp"
#include "kagent/common/files.hpp"
#include "kagent/common/utf8.hpp"
#include "kagent/sandbox/process.hpp"
#include "test_util.hpp"

using namespace kagent;
using namespace std::chrono_literals;
using json = nlohmann::json;

namespace {

constexpr const char* kModel = "qwen2.5-7b";

// The request's input tokens as the mock's "tokenizer" counts them.
int64_t counted_tokens(const json& body) {
  const size_t bytes = body["messages"].dump().size() + (body.contains("tools") ? body["tools"].dump().size() : 0);
  return static_cast<int64_t>(std::ceil(static_cast<double>(bytes) / 3.5));
}

struct Seen {
  json body;
  int64_t tokens = 0;
  bool refused = false;
};

// An OpenAI-compatible server with a window. `window` 0: GET /v1/models says nothing. `refuse`
// decides, per chat request (0-based), whether to refuse it whatever its size; a request over the
// window is refused in vLLM's words anyway. `reply` writes the assistant message of the k-th
// accepted request.
class WindowServer {
 public:
  using Reply = std::function<json(size_t accepted)>;
  using Refuse = std::function<std::optional<std::string>(size_t k, int64_t tokens)>;
  WindowServer(int64_t window, Reply reply, Refuse refuse = {})
      : window_(window), reply_(std::move(reply)), refuse_(std::move(refuse)) {
    if (window_ > 0)
      server_.http().Get("/v1/models", [this](const httplib::Request&, httplib::Response& res) {
        res.set_content(json{{"object", "list"}, {"data", {{{"id", kModel}, {"max_model_len", window_}}}}}.dump(),
                        "application/json");
      });
    server_.http().Post("/v1/chat/completions", [this](const httplib::Request& req, httplib::Response& res) {
      json body = json::parse(req.body);
      const int64_t tokens = counted_tokens(body);
      const int64_t max_tokens = body.value("max_tokens", 0);
      std::lock_guard<std::mutex> lock(mu_);
      const size_t k = seen_.size();
      seen_.push_back({body, tokens, false});
      std::optional<std::string> refusal;
      if (refuse_) refusal = refuse_(k, tokens);
      if (!refusal && window_ > 0 && tokens + max_tokens > window_)
        refusal = json{
            {"object", "error"},
            {"message", fmt::format("This model's maximum context length is {} tokens. However, you "
                                    "requested {} tokens ({} in the messages, {} in the completion). "
                                    "Please reduce the length of the messages or completion.",
                                    window_, tokens + max_tokens, tokens, max_tokens)},
            {"type", "BadRequestError"},
            {"code",
             400}}.dump();
      if (refusal) {
        seen_.back().refused = true;
        res.status = 400;
        res.set_content(*refusal, "application/json");
        return;
      }
      json message = reply_(accepted_++);
      const char* finish = message.contains("tool_calls") ? "tool_calls" : "stop";
      res.set_content(json{{"choices", {{{"index", 0}, {"message", message}, {"finish_reason", finish}}}},
                           {"usage", {{"prompt_tokens", tokens}, {"completion_tokens", 20}}}}
                          .dump(),
                      "application/json");
    });
    server_.start();
  }
  std::string url() const { return server_.url("/v1"); }
  std::vector<Seen> seen() {
    std::lock_guard<std::mutex> lock(mu_);
    return seen_;
  }

 private:
  int64_t window_;
  Reply reply_;
  Refuse refuse_;
  test::MockServer server_;
  std::mutex mu_;
  std::vector<Seen> seen_;
  size_t accepted_ = 0;
};

json calls(const std::vector<std::pair<std::string, json>>& list, size_t turn) {
  json tool_calls = json::array();
  for (size_t i = 0; i < list.size(); ++i)
    tool_calls.push_back({{"id", fmt::format("call_{}_{}", turn, i)},
                          {"type", "function"},
                          {"function", {{"name", list[i].first}, {"arguments", list[i].second.dump()}}}});
  return {{"role", "assistant"}, {"content", nullptr}, {"tool_calls", tool_calls}};
}

// 60 KB of numbered lines: each read_file result is as long as kagent lets one be.
std::string big_file() {
  std::string s;
  for (int i = 0; s.size() < 60000; ++i) s += fmt::format("line {:05d}: some long build output or log text\n", i);
  return s;
}

// Turn 0 writes big.txt (60 KB of arguments); every later turn reads it twice.
json reader(size_t accepted) {
  if (accepted == 0) return calls({{"write_file", {{"path", "big.txt"}, {"content", big_file()}}}}, accepted);
  return calls({{"read_file", {{"path", "big.txt"}}}, {"read_file", {{"path", "big.txt"}, {"start_line", 400}}}},
               accepted);
}

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t p = text.find(what); p != std::string::npos; p = text.find(what, p + 1)) ++n;
  return n;
}

class ContextRuns : public ::testing::Test {
 protected:
  void SetUp() override { dir.write("config/kagent/config.json", R"({"llm": {"stream": false, "max_attempts": 1}})"); }
  ProcessResult kagent(const WindowServer& s, std::vector<std::string> args) {
    std::vector<std::string> argv = {"env",
                                     "KAGENT_BASE_URL=" + s.url(),
                                     std::string("KAGENT_MODEL=") + kModel,
                                     "XDG_CONFIG_HOME=" + (dir.path() / "config").string(),
                                     "KAGENT_CACHE_DIR=" + (dir.path() / "cache").string(),
                                     (test::binary_dir() / "kagent").string()};
    args = test::optimize_anywhere(std::move(args));
    argv.insert(argv.end(), args.begin(), args.end());
    return run_capture(argv, 300s);
  }
  ProcessResult optimize(const WindowServer& s, const std::filesystem::path& run, std::vector<std::string> more) {
    std::vector<std::string> args = {"optimize", (test::examples_dir() / "optimize_demo/op.json").string(), "--out",
                                     run.string(), "--no-shell"};
    args.insert(args.end(), more.begin(), more.end());
    return kagent(s, args);
  }
  static std::vector<json> events_of(const std::filesystem::path& run, const std::string& type) {
    std::vector<json> out;
    for (const auto& e : agent::Transcript::read(run / "transcript.jsonl"))
      if (e.value("type", "") == type) out.push_back(e);
    return out;
  }
  test::TempDir dir;
};

}  // namespace

// The setup the README recommends (vLLM serving a 7B model at its 32k default) with long tool
// outputs: the whole turn budget, every request (input and max_tokens) under the window.
TEST_F(ContextRuns, ThirtyTwoKWindowWithLongToolOutputsLastsTheTurnBudget) {
  WindowServer s(32768, reader);
  auto run = dir.path() / "run";
  auto r = optimize(s, run, {"--turns", "16"});
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("context window: 32768 tokens (GET " + s.url() + "/models max_model_len)"), std::string::npos)
      << r.output;
  auto result = json::parse(read_text_file(run / "result.json"));
  EXPECT_EQ(result["stop_reason"], "turn budget") << r.output;
  EXPECT_EQ(result["turns"], 16);
  auto seen = s.seen();
  ASSERT_EQ(seen.size(), 16u) << r.output;
  for (size_t k = 0; k < seen.size(); ++k) {
    EXPECT_FALSE(seen[k].refused) << "request " << k << ": " << seen[k].tokens << " tokens";
    EXPECT_LE(seen[k].tokens + seen[k].body["max_tokens"].get<int64_t>(), 32768) << k;
    EXPECT_EQ(seen[k].body["max_tokens"], 8192) << "a quarter of the window is kagent's 8192";
  }
  // Later requests carry summaries of old outputs, and the latest results (cut to fit) whole.
  const std::string last = seen.back().body["messages"].dump();
  EXPECT_GT(count(last, "[elided to save context"), 5u);
  EXPECT_NE(last.find("line 00399"), std::string::npos) << "the latest read is there";
  EXPECT_GT(seen.back().tokens, 14000) << "the window is used, not starved";
  // The transcript keeps every output as the tool gave it: what the model saw is a view of it.
  size_t results = 0;
  for (const auto& e : events_of(run, "message"))
    if (e["message"]["role"] == "tool") {
      ++results;
      EXPECT_EQ(std::string(e["message"]["content"]).rfind("[elided", 0), std::string::npos);
    }
  EXPECT_EQ(results, 31u) << "one write and two reads a turn";
}

// A server that answers "context length exceeded" once (llama.cpp's words, a window smaller than
// kagent was told): the same turn is asked again, compacted, and the run goes on.
TEST_F(ContextRuns, RefusalGetsOneCompactedRetry) {
  WindowServer s(0, reader, [](size_t k, int64_t tokens) -> std::optional<std::string> {
    if (k != 4) return std::nullopt;
    return json{{"error",
                 {{"code", 400},
                  {"message", "the request exceeds the available context size, try increasing it"},
                  {"type", "exceed_context_size_error"},
                  {"n_prompt_tokens", tokens},
                  {"n_ctx", tokens - 2000}}}}
        .dump();
  });
  auto run = dir.path() / "run";
  auto r = optimize(s, run, {"--turns", "8", "--context-tokens", "100000"});
  EXPECT_EQ(r.exit_code, 1) << r.output;
  auto result = json::parse(read_text_file(run / "result.json"));
  EXPECT_EQ(result["stop_reason"], "turn budget") << r.output;
  EXPECT_EQ(result["turns"], 8);
  auto seen = s.seen();
  ASSERT_EQ(seen.size(), 9u) << "8 turns and one retry\n" << r.output;
  EXPECT_TRUE(seen[4].refused);
  const json& refused = seen[4].body["messages"];
  const json& retry = seen[5].body["messages"];
  ASSERT_EQ(retry.size(), refused.size()) << "the same turn";
  EXPECT_EQ(retry.back()["tool_call_id"], refused.back()["tool_call_id"]);
  EXPECT_LE(seen[5].tokens + 8192, seen[4].tokens - 2000) << "within the window the server stated";
  EXPECT_GT(count(retry.dump(), "[elided to save context"), count(refused.dump(), "[elided to save context"));
  for (size_t k = 5; k < seen.size(); ++k) EXPECT_FALSE(seen[k].refused) << k;
  EXPECT_NE(r.output.find("compacted the conversation"), std::string::npos) << r.output;
  EXPECT_TRUE(events_of(run, "endpoint_error").empty());
}

// Refused again after the compacted retry: the run stops with a reason (not exit 2 or 3), the
// transcript says why, and --resume continues it.
TEST_F(ContextRuns, SecondRefusalStopsTheRunResumably) {
  WindowServer s(0, reader, [](size_t k, int64_t) -> std::optional<std::string> {
    if (k < 3) return std::nullopt;
    return R"({"error": {"message": "context length exceeded", "type": "invalid_request_error"}})";
  });
  auto run = dir.path() / "run";
  auto r = optimize(s, run, {"--turns", "8"});
  EXPECT_EQ(r.exit_code, 1) << r.output;
  auto result = json::parse(read_text_file(run / "result.json"));
  EXPECT_EQ(result["stop_reason"], "context window full") << r.output;
  EXPECT_EQ(result["turns"], 3);
  EXPECT_EQ(s.seen().size(), 5u) << "3 turns, the refused fourth and its retry";
  EXPECT_NE(r.output.find("--resume"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("--context-tokens"), std::string::npos) << r.output;
  auto errors = events_of(run, "endpoint_error");
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_NE(errors[0].value("message", "").find("context length exceeded"), std::string::npos) << errors[0].dump();
  EXPECT_EQ(events_of(run, "stop").back()["reason"], "context window full");

  WindowServer more(32768, reader);
  auto resumed = kagent(more, {"optimize", "--resume", run.string(), "--no-shell", "--turns", "6"});
  EXPECT_EQ(resumed.exit_code, 1) << resumed.output;
  auto after = json::parse(read_text_file(run / "result.json"));
  EXPECT_EQ(after["stop_reason"], "turn budget") << resumed.output;
  EXPECT_EQ(after["turns"], 6);
  for (const auto& q : more.seen()) EXPECT_FALSE(q.refused);
}

// A window smaller than the opening: a clear error (exit 2) with the sizes and what to do, before
// any request; whether the server said the window, the user did, or the server refused the first
// request in its own words.
TEST_F(ContextRuns, OpeningOverTheWindowIsAClearErrorBeforeTheFirstRequest) {
  auto says_what_to_do = [](const std::string& out) {
    for (const char* s : {"the opening prompt does not fit the model's context window", "bytes of tool schemas",
                          "--context-tokens N", "--prompts DIR", "--skills DIR", "llama-server -c"})
      EXPECT_NE(out.find(s), std::string::npos) << s << "\n" << out;
  };
  {
    WindowServer s(4096, reader);
    auto r = optimize(s, dir.path() / "told", {"--turns", "4"});
    EXPECT_EQ(r.exit_code, 2) << r.output;
    says_what_to_do(r.output);
    EXPECT_NE(r.output.find("the window of 4096 tokens (GET"), std::string::npos) << r.output;
    EXPECT_TRUE(s.seen().empty()) << "no request was sent";
  }
  {
    WindowServer s(0, reader);
    auto r = optimize(s, dir.path() / "given", {"--turns", "4", "--context-tokens", "6000"});
    EXPECT_EQ(r.exit_code, 2) << r.output;
    says_what_to_do(r.output);
    EXPECT_NE(r.output.find("the window of 6000 tokens (--context-tokens)"), std::string::npos) << r.output;
    EXPECT_TRUE(s.seen().empty());
  }
  {
    WindowServer s(0, reader, [](size_t, int64_t tokens) -> std::optional<std::string> {
      return json{{"error",
                   {{"code", 400},
                    {"message", "the request exceeds the available context size, try increasing it"},
                    {"type", "exceed_context_size_error"},
                    {"n_prompt_tokens", tokens},
                    {"n_ctx", 8192}}}}
          .dump();
    });
    auto run = dir.path() / "refused";
    auto r = optimize(s, run, {"--turns", "4"});
    EXPECT_EQ(r.exit_code, 2) << r.output;
    says_what_to_do(r.output);
    EXPECT_NE(r.output.find("as the server counted"), std::string::npos) << r.output;
    EXPECT_NE(r.output.find("the window of 8192 tokens (as the server's refusal stated)"), std::string::npos)
        << r.output;
    EXPECT_NE(r.output.find("the server said"), std::string::npos) << r.output;
    EXPECT_EQ(s.seen().size(), 1u) << "nothing to compact in an opening: no retry";
    EXPECT_EQ(events_of(run, "endpoint_error").size(), 1u);
  }
}

// ---- the budget and the compaction, without a server ------------------------------------------

TEST(ContextBudget, RoomForTheReplyAndTheLearntRate) {
  agent::ContextBudget b(32768, 8192, 0);
  EXPECT_EQ(b.reply_tokens(), 8192);
  EXPECT_EQ(b.margin_tokens(), 1638);
  EXPECT_EQ(b.input_tokens(), 32768 - 8192 - 1638);
  EXPECT_EQ(b.limit_bytes(), static_cast<size_t>((32768 - 8192 - 1638) * 3)) << "3 bytes a token until told";
  b.learn(40000, 10000);  // 4 bytes a token
  EXPECT_TRUE(b.measured());
  EXPECT_EQ(b.limit_bytes(), static_cast<size_t>((32768 - 8192 - 1638) * 4));
  b.learn(40000, 5000);  // a cached prefix reported as fewer tokens: the rate stays
  EXPECT_EQ(b.limit_bytes(), static_cast<size_t>((32768 - 8192 - 1638) * 4));
  b.learn(30000, 10000);  // denser text: 3 bytes a token
  EXPECT_EQ(b.tokens(3000), 1000);
  // A refusal's figures: the smaller window it states, and its count.
  b.learn(llm::ContextRefusal{16384, 12000}, 24000);
  EXPECT_EQ(b.window(), 16384);
  EXPECT_EQ(b.reply_tokens(), 4096) << "a quarter of a small window";
  EXPECT_EQ(b.tokens(2), 1);
  // Small windows: the reply shrinks; no window: only the cap.
  EXPECT_EQ(agent::ContextBudget(4096, 8192, 0).reply_tokens(), 1024);
  EXPECT_EQ(agent::ContextBudget(0, 8192, 0).limit_bytes(), SIZE_MAX);
  EXPECT_EQ(agent::ContextBudget(0, 8192, 5000).limit_bytes(), 5000u);
}

TEST(ContextBudget, CompactionKeepsTheOpeningAndValidArguments) {
  using llm::Message;
  using llm::Role;
  std::vector<Message> m;
  m.push_back({Role::system, std::string(3000, 's'), {}, "", "", false});
  m.push_back({Role::user, std::string(2000, 't'), {}, "", "", false});
  for (int i = 0; i < 6; ++i) {
    llm::ToolCall c{fmt::format("c{}", i), "write_file",
                    json{{"path", fmt::format("k{}.cu", i)}, {"content", std::string(5000, 'k')}}, "", ""};
    c.raw_arguments = c.arguments.dump();
    m.push_back({Role::assistant, "", {c}, "", "", false});
    m.push_back({Role::tool, std::string(6000, 'o'), {}, c.id, "write_file", false});
  }
  const std::vector<Message> before = m;
  size_t after = agent::compact_conversation(m, 30000, 1000);
  EXPECT_LE(after, 30000u);
  EXPECT_EQ(m[0].content, before[0].content);
  EXPECT_EQ(m[1].content, before[1].content);
  EXPECT_NE(m[3].content, before[3].content) << "the oldest output gives way first";
  EXPECT_EQ(m.back().content, before.back().content) << "the latest output stays while the rest suffices";
  // Harder: the recent turns too; arguments stay JSON objects with their path.
  after = agent::compact_conversation(m, 9000, 1000);
  EXPECT_LE(after, 9000u);
  EXPECT_EQ(m[0].content, before[0].content);
  for (const auto& msg : m)
    for (const auto& c : msg.tool_calls) {
      json args = json::parse(c.raw_arguments);
      EXPECT_TRUE(args.is_object());
      EXPECT_TRUE(args.contains("path"));
      EXPECT_EQ(args, c.arguments);
    }
  // An opening alone over the limit: nothing to take; the size says so.
  std::vector<Message> opening(before.begin(), before.begin() + 2);
  EXPECT_EQ(agent::compact_conversation(opening, 1000, 1000), 6000u);
}

// A summarised tool result quotes the first line with text in it, cut on a UTF-8 boundary: an
// output that opens with a blank line still says what it was.
TEST(ContextBudget, SummaryQuotesTheFirstNonBlankLineCutOnACharacter) {
  using llm::Message;
  using llm::Role;
  std::vector<Message> m;
  m.push_back({Role::system, "s", {}, "", "", false});
  m.push_back({Role::user, "t", {}, "", "", false});
  std::string euros;
  for (int i = 0; i < 100; ++i) euros += "\xE2\x82\xAC";  // 300 bytes of three-byte characters
  llm::ToolCall c{"c0", "run_shell", json{{"command", "make"}}, "", ""};
  c.raw_arguments = c.arguments.dump();
  m.push_back({Role::assistant, "", {c}, "", "", false});
  m.push_back(
      {Role::tool, "\n  \ncompile error: " + euros + "\n" + std::string(20000, 'o'), {}, "c0", "run_shell", false});
  for (int i = 1; i < 7; ++i) {  // the last 6 messages are kept whole
    llm::ToolCall k{fmt::format("c{}", i), "read_file", json{{"path", "k.cu"}}, "", ""};
    k.raw_arguments = k.arguments.dump();
    m.push_back({Role::assistant, "", {k}, "", "", false});
    m.push_back({Role::tool, "ok", {}, k.id, "read_file", false});
  }
  agent::compact_conversation(m, 4000, 100);
  const std::string& s = m[3].content;
  ASSERT_EQ(s.rfind("[elided to save context", 0), 0u) << s;
  EXPECT_NE(s.find("it began: compile error: \xE2\x82\xAC"), std::string::npos) << s;
  EXPECT_NE(s.find("...]"), std::string::npos) << s;
  EXPECT_TRUE(is_valid_utf8(s));
  EXPECT_EQ(s.find('\n'), std::string::npos);
}
