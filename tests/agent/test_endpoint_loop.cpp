// `kagent optimize` against a mock of what a small model behind llama-cpp-python does (issue #17):
// empty replies end the run after the limit with a reason that says so; streams without usage give
// estimated, marked token figures; an empty event stream falls back to plain requests; tool_choice
// comes from flag, environment, op.json and config file in that order, reaches the wire and `bench
// --agent`'s children, and a bad one is exit 2; a 500 answering "required" says why. Every request
// and reply is in the transcript, and the API key nowhere in the run folder or the output.
#include <gtest/gtest.h>

#include "kagent/agent/transcript.hpp"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <mutex>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "../llm/mock_server.hpp"
#include "kagent/agent/agent.hpp"
#include "kagent/agent/nudges.hpp"
#include "kagent/agent/optimize_run.hpp"
#include "kagent/common/files.hpp"
#include "kagent/model_tools/file_tools.hpp"
#include "kagent/sandbox/process.hpp"
#include "test_util.hpp"

using namespace kagent;
using namespace std::chrono_literals;
using json = nlohmann::json;

namespace {

const std::string kKey = "sk-loop-secret-2468";

// A Chat Completions endpoint whose answer to the k-th request (0-based) `reply` writes.
class Endpoint {
 public:
  using Reply = std::function<void(size_t k, const json& body, httplib::Response& res)>;
  explicit Endpoint(Reply reply) : reply_(std::move(reply)) {
    server_.http().Post("/v1/chat/completions", [this](const httplib::Request& req, httplib::Response& res) {
      json body = json::parse(req.body);
      size_t k = 0;
      {
        std::lock_guard<std::mutex> lock(mu_);
        k = requests_.size();
        requests_.push_back(body);
        authorization_ = req.get_header_value("Authorization");
      }
      reply_(k, body, res);
    });
    server_.start();
  }
  std::string url() const { return server_.url("/v1"); }
  std::vector<json> requests() {
    std::lock_guard<std::mutex> lock(mu_);
    return requests_;
  }
  std::string authorization() {
    std::lock_guard<std::mutex> lock(mu_);
    return authorization_;
  }

 private:
  Reply reply_;
  test::MockServer server_;
  std::mutex mu_;
  std::vector<json> requests_;
  std::string authorization_;
};

json plain(const json& message, bool usage = true) {
  const char* finish = message.contains("tool_calls") ? "tool_calls" : "stop";
  json r = {{"choices", {{{"index", 0}, {"message", message}, {"finish_reason", finish}}}}};
  if (usage) r["usage"] = {{"prompt_tokens", 1000}, {"completion_tokens", 10}};
  return r;
}

json empty_message() {
  return {{"role", "assistant"}, {"content", ""}};
}

json call_message(const std::string& id, const std::string& name, const json& arguments) {
  return {{"role", "assistant"},
          {"content", nullptr},
          {"tool_calls",
           {{{"id", id}, {"type", "function"}, {"function", {{"name", name}, {"arguments", arguments.dump()}}}}}}};
}

// As llama-cpp-python streams an empty answer: a role chunk, a finish chunk, no usage.
void empty_stream(httplib::Response& res) {
  std::string body;
  for (const json& choice :
       {json{{"index", 0}, {"delta", {{"role", "assistant"}, {"content", ""}}}, {"finish_reason", nullptr}},
        json{{"index", 0}, {"delta", json::object()}, {"finish_reason", "stop"}}})
    body += "data: " + json{{"object", "chat.completion.chunk"}, {"choices", json::array({choice})}}.dump() + "\n\n";
  body += "data: [DONE]\n\n";
  res.set_chunked_content_provider("text/event-stream", [body](size_t, httplib::DataSink& sink) {
    sink.write(body.data(), body.size());
    sink.done();
    return true;
  });
}

bool streamed(const json& body) {
  return body.value("stream", false);
}

std::vector<json> of_type(const std::vector<json>& events, const std::string& type) {
  std::vector<json> out;
  for (const auto& e : events)
    if (e.value("type", "") == type) out.push_back(e);
  return out;
}

// The conversation as the transcript has it: every "message" event's message, in order.
std::vector<json> transcript_messages(const std::vector<json>& events) {
  std::vector<json> out;
  for (const auto& e : events)
    if (e.value("type", "") == "message") out.push_back(e["message"]);
  return out;
}

// Every request the endpoint saw is in the transcript (its messages, in order, then the reply to
// it), and the transcript has no reply the endpoint did not send.
void expect_transcript_has_every_request(const std::vector<json>& requests, const std::vector<json>& events) {
  const std::vector<json> messages = transcript_messages(events);
  size_t replies = 0, answered = 0;
  for (const auto& m : messages) replies += m["role"] == "assistant";
  for (size_t i = 0; i < requests.size(); ++i) {
    // A stream that fell back is the same request again, plainly: one reply for the two.
    const bool fell_back =
        streamed(requests[i]) && i + 1 < requests.size() && requests[i + 1]["messages"] == requests[i]["messages"];
    answered += fell_back ? 0 : 1;
  }
  EXPECT_EQ(replies, answered);
  for (const auto& r : requests) {
    const json& sent = r["messages"];
    ASSERT_LT(sent.size(), messages.size());
    for (size_t i = 0; i < sent.size(); ++i) {
      EXPECT_EQ(sent[i]["role"], messages[i]["role"]) << i;
      if (sent[i]["content"].is_string()) {
        EXPECT_EQ(sent[i]["content"], messages[i]["content"]) << i;
      }
    }
    EXPECT_EQ(messages.at(sent.size())["role"], "assistant") << "the reply to this request follows it";
  }
}

class EndpointLoop : public ::testing::Test {
 protected:
  void SetUp() override { config(R"({"llm": {"stream": false, "max_attempts": 1}})"); }
  void config(const std::string& text) { dir.write("config/kagent/config.json", text); }

  ProcessResult kagent(const Endpoint& e, std::vector<std::string> args, std::vector<std::string> env = {}) {
    std::vector<std::string> argv = {"env",
                                     "KAGENT_BASE_URL=" + e.url(),
                                     "KAGENT_MODEL=gemma-3-270m",
                                     "KAGENT_API_KEY=" + kKey,
                                     "XDG_CONFIG_HOME=" + (dir.path() / "config").string(),
                                     "KAGENT_CACHE_DIR=" + (dir.path() / "cache").string()};
    argv.insert(argv.end(), env.begin(), env.end());
    argv.push_back((test::binary_dir() / "kagent").string());
    args = test::optimize_anywhere(std::move(args));
    argv.insert(argv.end(), args.begin(), args.end());
    return run_capture(argv, 300s);
  }
  ProcessResult optimize(const Endpoint& e, const std::filesystem::path& run, std::vector<std::string> more = {},
                         std::vector<std::string> env = {}) {
    std::vector<std::string> args = {"optimize", op(), "--out", run.string(), "--no-shell"};
    args.insert(args.end(), more.begin(), more.end());
    return kagent(e, args, env);
  }
  std::string op() const {
    return op_path.empty() ? (test::examples_dir() / "optimize_demo/op.json").string() : op_path;
  }
  // The demo op with an "llm" section of its own.
  void op_with_llm(const json& llm) {
    json op = json::parse(read_text_file(test::examples_dir() / "optimize_demo/op.json"));
    op["llm"] = llm;
    dir.write("op/op.json", op.dump());
    std::filesystem::copy_file(test::examples_dir() / "optimize_demo/ref.cu", dir.path() / "op/ref.cu",
                               std::filesystem::copy_options::overwrite_existing);
    op_path = (dir.path() / "op/op.json").string();
  }
  // The key appears in no file of the run folder and not in the output.
  void expect_no_key(const std::filesystem::path& run, const ProcessResult& r) {
    EXPECT_EQ(r.output.find(kKey), std::string::npos) << r.output;
    for (const auto& f : std::filesystem::recursive_directory_iterator(run))
      if (f.is_regular_file()) {
        EXPECT_EQ(read_text_file(f.path()).find(kKey), std::string::npos) << f.path();
      }
  }

  test::TempDir dir;
  std::string op_path;
};

}  // namespace

// The 270M model answered every turn with nothing and kagent went on for the whole budget. Now the
// third empty reply in a row ends the run, saying so everywhere; each is answered with the exact
// next step; a reply with text in between starts the count again.
TEST_F(EndpointLoop, EmptyRepliesEndTheRunAfterTheLimit) {
  Endpoint e([](size_t k, const json&, httplib::Response& res) {
    json message =
        k == 2 ? json{{"role", "assistant"}, {"content", "Let me think about the kernel."}} : empty_message();
    res.set_content(plain(message).dump(), "application/json");
  });
  auto run = dir.path() / "run";
  auto r = optimize(e, run);
  EXPECT_EQ(r.exit_code, 1) << r.output;
  auto result = json::parse(read_text_file(run / "result.json"));
  EXPECT_EQ(result["stop_reason"], "3 empty replies in a row") << r.output;
  EXPECT_EQ(result["turns"], 6) << "empty, empty, text, then three empty";
  EXPECT_EQ(result["input_tokens"], 6000);
  EXPECT_EQ(result["tokens_estimated"], false);
  auto requests = e.requests();
  ASSERT_EQ(requests.size(), 6u);
  EXPECT_EQ(e.authorization(), "Bearer " + kKey);

  // The nudge after an empty reply: what happened, the limit, the next step with its arguments,
  // and the tools by name. After the text reply: the plain nudge.
  const json& after_first = requests[1]["messages"].back();
  EXPECT_EQ(after_first["role"], "user");
  const std::string nudge = after_first["content"];
  for (const char* s :
       {"Your reply was empty", "1 of 3", "write_file", "evaluate with {\"path\": \"kernel.cu\"}", "finish", "compile"})
    EXPECT_NE(nudge.find(s), std::string::npos) << s << " not in: " << nudge;
  EXPECT_EQ(nudge.find("shell"), std::string::npos) << "--no-shell: the shell is not offered: " << nudge;
  const std::string after_text = requests[3]["messages"].back()["content"];
  EXPECT_EQ(after_text.find("empty"), std::string::npos) << after_text;
  EXPECT_NE(std::string(requests[5]["messages"].back()["content"]).find("2 of 3"), std::string::npos);

  auto events = agent::Transcript::read(run / "transcript.jsonl");
  EXPECT_EQ(of_type(events, "stop").back()["reason"], "3 empty replies in a row");
  size_t empty_events = 0;
  for (const auto& ev : of_type(events, "message")) empty_events += ev.value("empty", false);
  EXPECT_EQ(empty_events, 5u);
  expect_transcript_has_every_request(requests, events);
  // The closing table and the status lines say it too.
  EXPECT_NE(r.output.find("3 empty replies in a row"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("(empty reply)"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("tokens 6000+60"), std::string::npos) << r.output;
  expect_no_key(run, r);
}

// Streams without usage (llama-cpp-python's): the figures are estimated, never 0, and marked in
// the status line, the transcript's reply events, result.json and the closing table.
TEST_F(EndpointLoop, StreamsWithoutUsageAreEstimatedAndMarked) {
  config(R"({"llm": {"stream": true, "max_attempts": 1}})");
  Endpoint e([](size_t, const json&, httplib::Response& res) { empty_stream(res); });
  auto run = dir.path() / "run";
  auto r = optimize(e, run);
  auto requests = e.requests();
  ASSERT_EQ(requests.size(), 3u) << r.output;
  for (const auto& q : requests) {
    EXPECT_TRUE(streamed(q));
    EXPECT_EQ(q["stream_options"], json({{"include_usage", true}}));
  }
  auto result = json::parse(read_text_file(run / "result.json"));
  EXPECT_EQ(result["stop_reason"], "3 empty replies in a row");
  EXPECT_EQ(result["tokens_estimated"], true);
  EXPECT_GT(result["input_tokens"].get<int64_t>(), 3 * 1000) << "three requests of a system prompt and a task";
  auto events = agent::Transcript::read(run / "transcript.jsonl");
  int64_t summed = 0;
  for (const auto& ev : of_type(events, "message")) {
    if (ev["message"]["role"] != "assistant") continue;
    EXPECT_EQ(ev["tokens_estimated"], true);
    EXPECT_GT(ev["input_tokens"].get<int64_t>(), 0);
    summed += ev["input_tokens"].get<int64_t>();
  }
  EXPECT_EQ(summed, result["input_tokens"].get<int64_t>());
  EXPECT_NE(r.output.find("tokens ~"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("(estimated)"), std::string::npos) << r.output;
  expect_transcript_has_every_request(requests, events);
  expect_no_key(run, r);

  // A resumed run keeps the mark (the figures come back from the transcript).
  Endpoint more([](size_t, const json&, httplib::Response& res) {
    res.set_content(plain(empty_message()).dump(), "application/json");
  });
  auto resumed = kagent(more, {"optimize", "--resume", run.string(), "--no-shell"});
  auto after = json::parse(read_text_file(run / "result.json"));
  EXPECT_EQ(after["tokens_estimated"], true) << resumed.output;
  EXPECT_EQ(after["turns"], 6);
}

// tool_choice auto, streamed, on llama-cpp-python: HTTP 200 with an empty event stream. The run
// goes on with plain requests, which carry real usage.
TEST_F(EndpointLoop, EmptyEventStreamFallsBackToPlainRequests) {
  config(R"({"llm": {"stream": true, "max_attempts": 1}})");
  Endpoint e([](size_t k, const json& body, httplib::Response& res) {
    if (streamed(body)) {
      res.set_chunked_content_provider("text/event-stream", [](size_t, httplib::DataSink& sink) {
        sink.done();
        return true;
      });
      return;
    }
    json message = k == 1 ? call_message("call_1", "list_files", json::object()) : empty_message();
    res.set_content(plain(message).dump(), "application/json");
  });
  auto run = dir.path() / "run";
  auto r = optimize(e, run);
  auto requests = e.requests();
  ASSERT_EQ(requests.size(), 5u) << r.output;
  EXPECT_TRUE(streamed(requests[0]));
  for (size_t i = 1; i < requests.size(); ++i) EXPECT_FALSE(streamed(requests[i])) << i;
  auto result = json::parse(read_text_file(run / "result.json"));
  EXPECT_EQ(result["stop_reason"], "3 empty replies in a row") << r.output;
  EXPECT_EQ(result["turns"], 4);
  EXPECT_EQ(result["tokens_estimated"], false);
  EXPECT_EQ(result["input_tokens"], 4000);
  auto events = agent::Transcript::read(run / "transcript.jsonl");
  expect_transcript_has_every_request(requests, events);
  expect_no_key(run, r);
}

// Each source of tool_choice, and that each beats the next: flag, environment, op.json, config file.
TEST_F(EndpointLoop, ToolChoiceFromEachSourceInOrder) {
  Endpoint e([](size_t, const json&, httplib::Response& res) {
    res.set_content(plain(empty_message()).dump(), "application/json");
  });
  auto choice_of_run = [&](const std::string& name, std::vector<std::string> more = {},
                           std::vector<std::string> env = {}) {
    const size_t before = e.requests().size();
    more.insert(more.end(), {"--turns", "1"});
    auto r = optimize(e, dir.path() / name, more, env);
    EXPECT_EQ(r.exit_code, 1) << r.output;
    auto requests = e.requests();
    EXPECT_EQ(requests.size(), before + 1) << r.output;
    return requests.size() > before ? requests.back()["tool_choice"] : json();
  };
  const json finish = {{"type", "function"}, {"function", {{"name", "finish"}}}};
  const json evaluate = {{"type", "function"}, {"function", {{"name", "evaluate"}}}};

  EXPECT_EQ(choice_of_run("default"), "auto");
  config(R"({"llm": {"stream": false, "max_attempts": 1, "tool_choice": "finish"}})");
  EXPECT_EQ(choice_of_run("file"), finish);
  op_with_llm({{"tool_choice", "evaluate"}});
  EXPECT_EQ(choice_of_run("op"), evaluate);
  EXPECT_EQ(choice_of_run("env", {}, {"KAGENT_TOOL_CHOICE=required"}), "required");
  EXPECT_EQ(choice_of_run("flag", {"--tool-choice", "auto"}, {"KAGENT_TOOL_CHOICE=required"}), "auto");

  // Recorded: run.json keeps it for a resume, result.json's llm line names it.
  auto run_json = json::parse(read_text_file(dir.path() / "env/run.json"));
  EXPECT_EQ(run_json["llm"]["tool_choice"], "required");
  auto result = json::parse(read_text_file(dir.path() / "env/result.json"));
  EXPECT_NE(result["llm"].get<std::string>().find("tool_choice required"), std::string::npos) << result["llm"];
  // A resume keeps the run's choice over the environment's.
  auto resumed = kagent(e, {"optimize", "--resume", (dir.path() / "env").string(), "--no-shell", "--turns", "2"},
                        {"KAGENT_TOOL_CHOICE=finish"});
  EXPECT_EQ(e.requests().back()["tool_choice"], "required") << resumed.output;
}

// A bad tool_choice from any source is exit 2 naming the source, before any request.
TEST_F(EndpointLoop, BadToolChoiceIsExit2NamingTheSource) {
  Endpoint e([](size_t, const json&, httplib::Response& res) {
    res.set_content(plain(empty_message()).dump(), "application/json");
  });
  struct Case {
    std::vector<std::string> flags, env;
    std::string config, says;
  };
  const std::vector<Case> cases = {
      {{"--tool-choice", "none"}, {}, "", "tool_choice 'none' (from flag)"},
      {{}, {"KAGENT_TOOL_CHOICE=eval uate"}, "", "tool_choice 'eval uate' (from env $KAGENT_TOOL_CHOICE)"},
      {{}, {}, R"({"llm": {"tool_choice": 3}})", "llm.tool_choice: expected a non-empty string"},
      {{}, {}, R"({"llm": {"tool_choice": "any!"}})", "(from config file"},
      {{"--tool-choice", "shell"}, {}, "", "tool_choice 'shell' (from flag): this run offers no such tool"},
  };
  int i = 0;
  for (const auto& c : cases) {
    config(c.config.empty() ? R"({"llm": {"stream": false}})" : c.config);
    auto run = dir.path() / fmt::format("bad{}", i++);
    auto r = optimize(e, run, c.flags, c.env);
    EXPECT_EQ(r.exit_code, 2) << r.output;
    EXPECT_NE(r.output.find(c.says), std::string::npos) << c.says << "\n" << r.output;
    EXPECT_EQ(r.output.find(kKey), std::string::npos) << r.output;
  }
  op_with_llm({{"tool_choice", ""}});
  auto r = optimize(e, dir.path() / "bad-op");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("op.json: llm.tool_choice"), std::string::npos) << r.output;
  EXPECT_TRUE(e.requests().empty()) << "no request was sent";
  // bench refuses it once, before starting any agent.
  auto bench = kagent(e, {"bench", (test::examples_dir() / "optimize_demo").string(), "--agent", "--tool-choice",
                          "none", "--out", (dir.path() / "b.jsonl").string()});
  EXPECT_EQ(bench.exit_code, 2) << bench.output;
  EXPECT_NE(bench.output.find("tool_choice 'none' (from flag --tool-choice)"), std::string::npos) << bench.output;
}

// llama-cpp-python answers tool_choice "required" with HTTP 500: the run ends with exit 3 and an
// error that names the tool choice as the likely cause.
TEST_F(EndpointLoop, ServerErrorOnRequiredSaysWhy) {
  Endpoint e([](size_t, const json& body, httplib::Response& res) {
    if (body["tool_choice"] == "required") {
      res.status = 500;
      res.set_content(R"({"error": {"message": "Internal Server Error"}})", "application/json");
      return;
    }
    res.set_content(plain(empty_message()).dump(), "application/json");
  });
  auto run = dir.path() / "run";
  auto r = optimize(e, run, {"--tool-choice", "required"});
  EXPECT_EQ(r.exit_code, 3) << r.output;
  EXPECT_NE(r.output.find("HTTP 500"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("tool_choice 'required' (from flag)"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("likely cause"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("--tool-choice auto"), std::string::npos) << r.output;
  // The transcript says why the run ended, not only stderr.
  bool recorded = false;
  for (const auto& ev : agent::Transcript::read(run / "transcript.jsonl"))
    if (ev.value("type", "") == "endpoint_error") {
      recorded = true;
      EXPECT_EQ(ev.value("exit_code", 0), 3);
      EXPECT_NE(ev.value("message", "").find("HTTP 500"), std::string::npos) << ev.dump();
    }
  EXPECT_TRUE(recorded) << "no endpoint_error event";
  expect_no_key(run, r);
}

// bench --agent hands --tool-choice to each agent child, like the other LLM flags.
TEST_F(EndpointLoop, BenchAgentPassesToolChoiceToItsChildren) {
  Endpoint e([](size_t, const json&, httplib::Response& res) {
    res.set_content(plain(empty_message()).dump(), "application/json");
  });
  std::filesystem::create_directories(dir.path() / "ops/demo");
  std::filesystem::copy_file(test::examples_dir() / "optimize_demo/op.json", dir.path() / "ops/demo/op.json");
  std::filesystem::copy_file(test::examples_dir() / "optimize_demo/ref.cu", dir.path() / "ops/demo/ref.cu");
  auto r = kagent(e, {"bench", (dir.path() / "ops").string(), "--agent", "--tool-choice", "finish", "--turns", "1",
                      "--no-shell", "--out", (dir.path() / "agent.jsonl").string()});
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find(R"("tool_choice":"finish")"), std::string::npos) << r.output;
  auto requests = e.requests();
  ASSERT_EQ(requests.size(), 1u) << r.output;
  EXPECT_EQ(requests[0]["tool_choice"], json({{"type", "function"}, {"function", {{"name", "finish"}}}}));

  // The child got its options as one document (the struct's to_json), not as flags.
  std::vector<std::filesystem::path> files;
  for (const auto& f : std::filesystem::recursive_directory_iterator(dir.path() / "runs"))
    if (f.path().filename() == "optimize-options.json") files.push_back(f.path());
  ASSERT_EQ(files.size(), 1u);
  const std::filesystem::path run = files[0].parent_path();
  agent::OptimizeRunOptions o = agent::load_optimize_options(files[0]);
  EXPECT_EQ(o.llm.tool_choice, "finish");
  EXPECT_EQ(o.turns, 1);
  EXPECT_TRUE(o.no_shell);
  EXPECT_EQ(o.out, run.string());
  EXPECT_EQ(std::filesystem::path(o.op).filename(), "op.json");
  EXPECT_EQ(read_text_file(run / "bench-command.txt").find("--turns"), std::string::npos);
  EXPECT_NE(read_text_file(run / "bench-command.txt").find("optimize --options " + files[0].string()),
            std::string::npos);
  EXPECT_TRUE(std::filesystem::exists(run / "result.json"));

  // --options gives every setting: a flag beside it is refused (exit 2) rather than ignored.
  auto both = kagent(e, {"optimize", "--options", files[0].string(), "--turns", "3"});
  EXPECT_EQ(both.exit_code, 2) << both.output;
  EXPECT_NE(both.output.find("--turns cannot be added"), std::string::npos) << both.output;
}

// --max-tool-calls and --max-reply-bytes (with a unit) reach the run: the calls past the limit are
// answered, not run; a reply over the bound ends the run with exit 3 naming the bound and the flag.
TEST_F(EndpointLoop, ReplyLimitFlagsReachTheRun) {
  Endpoint e([](size_t k, const json&, httplib::Response& res) {
    if (k == 0) {
      json message = call_message("call_0", "list_files", json::object());
      for (int i = 1; i < 5; ++i)
        message["tool_calls"].push_back({{"id", fmt::format("call_{}", i)},
                                         {"type", "function"},
                                         {"function", {{"name", "list_files"}, {"arguments", "{}"}}}});
      res.set_content(plain(message).dump(), "application/json");
      return;
    }
    res.set_content(plain({{"role", "assistant"}, {"content", std::string(100000, 'a')}}).dump(), "application/json");
  });
  auto run = dir.path() / "run";
  auto r = optimize(e, run, {"--max-tool-calls", "2", "--max-reply-bytes", "64KiB", "--turns", "4"});
  EXPECT_EQ(r.exit_code, 3) << r.output;
  EXPECT_NE(r.output.find("exceeded the bound of 65536 bytes"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("--max-reply-bytes"), std::string::npos) << r.output;
  auto requests = e.requests();
  ASSERT_EQ(requests.size(), 2u) << r.output;
  int run_calls = 0, not_run = 0;
  for (const auto& m : requests[1]["messages"])
    if (m["role"] == "tool") (std::string(m["content"]).find("not run") != std::string::npos ? not_run : run_calls)++;
  EXPECT_EQ(run_calls, 2);
  EXPECT_EQ(not_run, 3);
  expect_no_key(run, r);
}

namespace {

// Answers every request with nothing at all.
class SilentProvider : public llm::Provider {
 public:
  llm::ChatResponse chat(const llm::ChatRequest& rq) override {
    requests.push_back(rq);
    llm::ChatResponse r;
    r.message.role = llm::Role::assistant;
    r.message.content = requests.size() == 1 ? " \n" : "";  // whitespace is nothing too
    return r;
  }
  std::string name() const override { return "silent"; }
  std::vector<llm::ChatRequest> requests;
};

}  // namespace

// The limit is an option like the malformed-call limit; the request carries the loop's tool choice.
TEST(AgentLoop, EmptyReplyLimitIsAnOption) {
  test::TempDir dir;
  model_tools::Workspace ws(dir.path() / "ws");
  model_tools::ToolSet set = model_tools::make_file_tools(ws);
  agent::Transcript transcript(dir.path() / "transcript.jsonl");
  agent::RunRecord record(dir.path(), transcript);
  agent::AgentOptions opt;
  opt.max_empty = 2;
  opt.tool_choice = "required";
  SilentProvider provider;
  agent::Agent ag(provider, set, transcript, record, opt);
  agent::RunState state;
  state.messages.push_back({llm::Role::user, "go", {}, "", "", false});
  agent::RunResult res = ag.run(state);
  EXPECT_EQ(res.stop_reason, "2 empty replies in a row");
  EXPECT_EQ(res.turns, 2);
  ASSERT_EQ(provider.requests.size(), 2u);
  EXPECT_EQ(provider.requests[0].tool_choice, "required");
  const std::string nudge = provider.requests[1].messages.back().content;
  EXPECT_NE(nudge.find("1 of 2"), std::string::npos) << nudge;
  EXPECT_NE(nudge.find("read_file"), std::string::npos) << nudge;
  EXPECT_NE(nudge.find("Call one of the tools by its name"), std::string::npos)
      << "no write_file + evaluate here: the generic step: " << nudge;
}

// With a candidate scored, the next step is to finish with it, by its path.
TEST(Nudges, EmptyReplyNamesTheBestCandidateToFinishWith) {
  const std::vector<std::string> tools = {"write_file", "evaluate", "finish"};
  const std::string n = agent::empty_reply_nudge(tools, std::string("softmax_v2.cu"), 2, 3);
  EXPECT_NE(n.find(R"(call finish with {"path": "softmax_v2.cu"})"), std::string::npos) << n;
  EXPECT_NE(n.find("2 of 3"), std::string::npos) << n;
  EXPECT_NE(n.find("The tools are: write_file, evaluate, finish."), std::string::npos) << n;
  const std::string first = agent::empty_reply_nudge(tools, std::nullopt, 1, 3);
  EXPECT_NE(first.find(R"(then call evaluate with {"path": "kernel.cu"})"), std::string::npos) << first;
  EXPECT_TRUE(agent::is_empty_reply(" \n\t", 0));
  EXPECT_FALSE(agent::is_empty_reply("", 1));
  EXPECT_FALSE(agent::is_empty_reply("x", 0));
}
