// `kagent optimize` end to end against a mock OpenAI-compatible server on 127.0.0.1 that plays
// the demo session (examples/optimize_demo/session.jsonl): the transcript, the candidates and
// result.json; a run killed mid-way and resumed; the malformed-call limit; the budget stops.
// Without a GPU the evaluations answer "no GPU" and the loop still completes; with one, the
// session's final kernel must reach tier 2.
#include <gtest/gtest.h>

#include <cstring>

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>

#include <atomic>
#include <fstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "../llm/mock_server.hpp"
#include "kagent/agent/agent.hpp"
#include "kagent/common/error.hpp"
#include "kagent/common/files.hpp"
#include "kagent/gpu/devices.hpp"
#include "kagent/model_tools/file_tools.hpp"
#include "kagent/sandbox/process.hpp"
#include "test_util.hpp"

using namespace kagent;
using namespace std::chrono_literals;
using json = nlohmann::json;

extern char** environ;

namespace {

std::vector<json> lines_of(const std::filesystem::path& p) {
  std::vector<json> out;
  std::ifstream in(p);
  std::string line;
  while (std::getline(in, line))
    if (!line.empty()) out.push_back(json::parse(line));
  return out;
}

// Plays `turns` (the script's format) as Chat Completions replies. Stateless: the turn served is
// the number of assistant messages in the request, so a resumed run gets the next one.
class SessionServer {
 public:
  explicit SessionServer(std::vector<json> turns) : turns_(std::move(turns)) {
    server_.http().Post("/v1/chat/completions", [this](const httplib::Request& req, httplib::Response& res) {
      json body = json::parse(req.body);
      size_t k = 0;
      for (const auto& m : body["messages"])
        if (m["role"] == "assistant") ++k;
      {
        std::lock_guard<std::mutex> lock(mu_);
        requests_.push_back(body);
      }
      if (hang_at_ >= 0 && static_cast<int>(k) == hang_at_) {
        hung_ = true;
        while (!release_) std::this_thread::sleep_for(10ms);
        return;  // the client is gone by now
      }
      json reply;
      if (k < turns_.size()) {
        json msg = {{"role", "assistant"}, {"content", turns_[k].value("content", "")}};
        json calls = json::array();
        int i = 0;
        for (const auto& c : turns_[k].value("tool_calls", json::array())) {
          json args = c.contains("raw") ? json(c["raw"]) : json(c["arguments"].dump());
          calls.push_back({{"id", "call_" + std::to_string(k) + "_" + std::to_string(i++)},
                           {"type", "function"},
                           {"function", {{"name", c["name"]}, {"arguments", args}}}});
        }
        if (!calls.empty()) msg["tool_calls"] = calls;
        reply = {
            {"choices", {{{"index", 0}, {"message", msg}, {"finish_reason", calls.empty() ? "stop" : "tool_calls"}}}},
            {"usage", {{"prompt_tokens", 1000}, {"completion_tokens", 100}}}};
      } else {
        reply = {{"choices",
                  {{{"index", 0},
                    {"message", {{"role", "assistant"}, {"content", "nothing left"}}},
                    {"finish_reason", "stop"}}}}};
      }
      res.set_content(reply.dump(), "application/json");
    });
    server_.start();
  }
  ~SessionServer() {
    release_ = true;
    server_.stop();
  }
  std::string url() const { return server_.url("/v1"); }
  std::vector<json> requests() {
    std::lock_guard<std::mutex> lock(mu_);
    return requests_;
  }
  void hang_at(int turn) { hang_at_ = turn; }
  bool hung() const { return hung_; }
  void release() { release_ = true; }

 private:
  std::vector<json> turns_;
  test::MockServer server_;
  std::mutex mu_;
  std::vector<json> requests_;
  std::atomic<int> hang_at_{-1};
  std::atomic<bool> hung_{false}, release_{false};
};

class Optimize : public ::testing::Test {
 protected:
  void SetUp() override {
    dir.write("config/kagent/config.json", R"({"llm": {"stream": false, "max_attempts": 1}})");
    gpu = !query_gpus().gpus.empty();
  }
  std::vector<std::string> env_for(const SessionServer& s) const {
    return {"KAGENT_BASE_URL=" + s.url(), "KAGENT_MODEL=mock-model", "KAGENT_API_KEY=sk-agent-secret",
            "XDG_CONFIG_HOME=" + (dir.path() / "config").string(),
            "KAGENT_CACHE_DIR=" + (dir.path() / "cache").string()};
  }
  ProcessResult optimize(const SessionServer& s, std::vector<std::string> args) {
    std::vector<std::string> argv = {"env"};
    for (auto& e : env_for(s)) argv.push_back(e);
    argv.push_back((test::binary_dir() / "kagent").string());
    args.insert(args.begin(), "optimize");
    args = test::optimize_anywhere(std::move(args));  // the loop's tests run in CI without a GPU
    argv.insert(argv.end(), args.begin(), args.end());
    return run_capture(argv, 600s);
  }
  // `kagent optimize --without-gpu ARGS` started in the background against `s` (its stderr into
  // `err` when given): its pid.
  pid_t spawn_optimize(const SessionServer& s, const std::vector<std::string>& args,
                       const std::vector<std::string>& env = {}, const std::string& err = "") {
    std::vector<std::string> all = env;
    for (auto& e : env_for(s)) all.push_back(e);
    std::vector<std::string> argv = {"optimize"};
    argv.insert(argv.end(), args.begin(), args.end());
    return test::spawn_kagent(all, test::optimize_anywhere(std::move(argv)), err);
  }
  static std::vector<json> demo_turns() { return lines_of(test::examples_dir() / "optimize_demo/session.jsonl"); }
  static std::string op() { return (test::examples_dir() / "optimize_demo/op.json").string(); }

  test::TempDir dir;
  bool gpu = false;
};

std::vector<json> of_type(const std::vector<json>& events, const std::string& type) {
  std::vector<json> out;
  for (const auto& e : events)
    if (e.value("type", "") == type) out.push_back(e);
  return out;
}

std::vector<json> tool_results(const std::vector<json>& events) {
  std::vector<json> out;
  for (const auto& e : events)
    if (e.value("type", "") == "message" && e["message"]["role"] == "tool") out.push_back(e["message"]);
  return out;
}

}  // namespace

TEST_F(Optimize, DemoSessionThroughAnOpenAiCompatibleServer) {
  SessionServer server(demo_turns());
  auto run = dir.path() / "run";
  auto r = optimize(server, {op(), "--out", run.string()});
  EXPECT_EQ(r.output.find("sk-agent-secret"), std::string::npos) << r.output;
  auto result = json::parse(read_text_file(run / "result.json"));
  EXPECT_EQ(result["stop_reason"], "finish") << r.output;
  EXPECT_EQ(result["turns"], 8);
  EXPECT_EQ(result["final"], "softmax.cu");
  EXPECT_EQ(result["input_tokens"], 8000);
  EXPECT_EQ(result["output_tokens"], 800);

  // What the model was sent: the system prompt and skill, the filled task, every tool's schema,
  // and each turn's tool results before the next turn.
  auto requests = server.requests();
  ASSERT_EQ(requests.size(), 8u);
  const auto& first = requests[0];
  EXPECT_EQ(first["model"], "mock-model");
  EXPECT_EQ(first["messages"][0]["role"], "system");
  EXPECT_NE(first["messages"][0]["content"].get<std::string>().find("name: cuda-optimization"), std::string::npos);
  const std::string task = first["messages"][1]["content"];
  for (const char* s : {"softmax_rows_demo", "[4096, 1024]", "softmax_rows_ref", "/*kagent", "atol"})
    EXPECT_NE(task.find(s), std::string::npos) << s;
  EXPECT_EQ(task.find("{{"), std::string::npos) << "every placeholder filled";
  // Every tool in the task's list has its arguments and a description after its name (one-sentence
  // descriptions were once cut to nothing).
  for (const char* t :
       {"read_file", "write_file", "edit_file", "list_files", "compile", "evaluate", "profile", "finish"}) {
    const size_t at = task.find(std::string("\n- ") + t + "(");
    ASSERT_NE(at, std::string::npos) << t << " is not in the task's tool list\n" << task;
    const size_t text = task.find("): ", at) + 3, eol = task.find('\n', at + 1);
    ASSERT_LT(text, eol) << t << " has no argument list: " << task.substr(at, eol - at);
    EXPECT_GT(eol - text, 10u) << t << " has no description: " << task.substr(at, eol - at);
  }
  std::set<std::string> tools;
  for (const auto& t : first["tools"]) tools.insert(t["function"]["name"]);
  for (const char* t :
       {"read_file", "write_file", "edit_file", "list_files", "compile", "evaluate", "profile", "finish"})
    EXPECT_TRUE(tools.count(t)) << t;
  const auto& third = requests[2]["messages"];
  EXPECT_EQ(third.back()["role"], "tool");
  EXPECT_NE(third.back()["content"].get<std::string>().find("num_warps"), std::string::npos)
      << "the compile error reached the model: " << third.back().dump();

  // The transcript has every message, in order, and the workspace the final kernel.
  auto events = lines_of(run / "transcript.jsonl");
  auto results = tool_results(events);
  ASSERT_EQ(results.size(), 8u);
  EXPECT_EQ(results[0]["tool_name"], "write_file");
  EXPECT_TRUE(results[1].value("is_error", false)) << "compile failed";
  EXPECT_EQ(of_type(events, "stop").back()["reason"], "finish");
  std::string final_source = read_text_file(run / "workspace/softmax.cu");
  EXPECT_NE(final_source.find("* inv"), std::string::npos);

  if (!gpu) {
    EXPECT_EQ(r.exit_code, 1) << "no correct candidate without a GPU\n" << r.output;
    EXPECT_NE(results[3]["content"].get<std::string>().find("no GPU"), std::string::npos) << results[3].dump();
    EXPECT_TRUE(result["best"].is_null());
    return;
  }
  // With a GPU: the first evaluation is wrong, the second correct and faster than the reference.
  EXPECT_EQ(r.exit_code, 0) << r.output;
  auto evals = of_type(events, "evaluation");
  ASSERT_GE(evals.size(), 2u);
  EXPECT_EQ(evals[0]["score"]["tier"], -1);
  EXPECT_GE(evals[1]["score"]["tier"], 2) << evals[1].dump();
  EXPECT_GE(result["best"]["tier"].get<int>(), 2);
  EXPECT_EQ(read_text_file(run / "best.cu"), final_source);
  EXPECT_TRUE(std::filesystem::exists(run / "candidates/001.cu"));
  EXPECT_TRUE(std::filesystem::exists(run / "candidates/002.cu"));
}

TEST_F(Optimize, KilledRunResumesWithNothingLost) {
  SessionServer server(demo_turns());
  server.hang_at(4);  // the 5th request never answers: the run is killed while waiting
  auto run = dir.path() / "run";
  const pid_t pid = spawn_optimize(server, {op(), "--out", run.string(), "--quiet"});
  ASSERT_GT(pid, 0);
  for (int i = 0; i < 3000 && !server.hung(); ++i) std::this_thread::sleep_for(10ms);
  ASSERT_TRUE(server.hung());
  kill(pid, SIGKILL);
  int status = 0;
  waitpid(pid, &status, 0);
  server.hang_at(-1);
  server.release();
  EXPECT_FALSE(std::filesystem::exists(run / "result.json"));
  const size_t before = tool_results(lines_of(run / "transcript.jsonl")).size();
  EXPECT_EQ(before, 4u) << "four turns done before the kill";

  auto r = optimize(server, {"--resume", run.string()});
  auto result = json::parse(read_text_file(run / "result.json"));
  EXPECT_EQ(result["stop_reason"], "finish") << r.output;
  EXPECT_EQ(result["turns"], 8) << "the turns before the kill count";
  auto events = lines_of(run / "transcript.jsonl");
  auto results = tool_results(events);
  ASSERT_EQ(results.size(), 8u) << "no turn lost or repeated";
  EXPECT_EQ(results[4]["tool_name"], "edit_file");
  EXPECT_EQ(of_type(events, "resume").size(), 1u);
  // The resumed request carried the whole conversation so far.
  auto requests = server.requests();
  size_t assistants = 0;
  for (const auto& m : requests.back()["messages"]) assistants += m["role"] == "assistant";
  EXPECT_EQ(assistants, 7u);
  // A finished run is not resumed again.
  auto again = optimize(server, {"--resume", run.string()});
  EXPECT_EQ(again.exit_code, 2) << again.output;
  EXPECT_NE(again.output.find("already finished"), std::string::npos) << again.output;
}

// Without a GPU (and without --without-gpu) the run stops before its first request: its candidates
// could not be evaluated, and the tokens would be spent for nothing.
TEST_F(Optimize, WithoutAGpuTheRunStopsBeforeItsFirstRequest) {
  if (gpu) GTEST_SKIP() << "this machine has a GPU";
  SessionServer server(demo_turns());
  std::vector<std::string> argv = {"env"};
  for (auto& e : env_for(server)) argv.push_back(e);
  for (auto s : {(test::binary_dir() / "kagent").string(), std::string("optimize"), op(), std::string("--out"),
                 (dir.path() / "run").string()})
    argv.push_back(s);
  auto r = run_capture(argv, 120s);
  EXPECT_EQ(r.exit_code, 3) << r.output;
  EXPECT_NE(r.output.find("--without-gpu"), std::string::npos) << r.output;
  EXPECT_TRUE(server.requests().empty()) << "no request sent";
}

// Ctrl-C while the model is asked ends the run as a stop: result.json written ("cancelled"), exit
// 3, a line saying how to resume, and the resumed run finishes with nothing lost.
TEST_F(Optimize, CtrlCWritesTheResultAndSaysHowToResume) {
  SessionServer server(demo_turns());
  server.hang_at(3);
  auto run = dir.path() / "run";
  const std::string err = (dir.path() / "stderr.txt").string();
  const pid_t pid = spawn_optimize(server, {op(), "--out", run.string(), "--quiet"}, {}, err);
  ASSERT_GT(pid, 0);
  for (int i = 0; i < 3000 && !server.hung(); ++i) std::this_thread::sleep_for(10ms);
  ASSERT_TRUE(server.hung());
  kill(pid, SIGINT);  // env exec'd kagent: the same process
  int status = 0;
  waitpid(pid, &status, 0);
  server.hang_at(-1);
  server.release();
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 3);
  const std::string said = read_text_file(err);
  EXPECT_NE(said.find("kagent optimize --resume " + run.string()), std::string::npos) << said;
  ASSERT_TRUE(std::filesystem::exists(run / "result.json"));
  auto result = json::parse(read_text_file(run / "result.json"));
  EXPECT_EQ(result["stop_reason"], "cancelled");
  EXPECT_EQ(result["turns"], 3);
  auto r = optimize(server, {"--resume", run.string()});
  result = json::parse(read_text_file(run / "result.json"));
  EXPECT_EQ(result["stop_reason"], "finish") << r.output;
  EXPECT_EQ(tool_results(lines_of(run / "transcript.jsonl")).size(), 8u) << "no turn lost or repeated";
}

// A candidate whose compile never ends (a macro expanding to 2^40 tokens) is stopped at the compile
// time limit and answered as the compile call's result: the run goes on, and a run killed after
// that answer resumes after it instead of compiling the same source again.
TEST_F(Optimize, ACompileThatNeverEndsIsAnsweredAndNotRepeatedOnResume) {
  std::string bomb =
      "/*kagent\n{\"launch\": [{\"kernel\": \"k\", \"grid\": [1], \"block\": [1], \"args\": [\"x\", \"out\"]}]}\n*/\n"
      "#define A0 x\n";
  for (int i = 1; i <= 40; ++i)
    bomb += "#define A" + std::to_string(i) + " A" + std::to_string(i - 1) + " A" + std::to_string(i - 1) + "\n";
  bomb +=
      "__device__ int v = sizeof(A40);\n"
      "extern \"C\" __global__ void k(const float* x, float* out) { out[0] = x[0]; }\n";
  json write = {{"content", "a first version"},
                {"tool_calls", {{{"name", "write_file"}, {"arguments", {{"path", "bomb.cu"}, {"content", bomb}}}}}}};
  json compile = {{"content", "compiling"},
                  {"tool_calls", {{{"name", "compile"}, {"arguments", {{"path", "bomb.cu"}}}}}}};
  json finish = {{"content", "done"}, {"tool_calls", {{{"name", "finish"}, {"arguments", {{"path", "bomb.cu"}}}}}}};
  SessionServer server({write, compile, finish});
  server.hang_at(2);  // the request after the compile's answer never returns: the run is killed there
  auto run = dir.path() / "run";
  const pid_t pid =
      spawn_optimize(server, {op(), "--out", run.string(), "--quiet", "--no-shell"}, {"KAGENT_COMPILE_TIMEOUT=10"});
  ASSERT_GT(pid, 0);
  int status = 0;
  bool exited = false;
  for (int i = 0; i < 30000 && !server.hung() && !exited; ++i) {
    exited = waitpid(pid, &status, WNOHANG) == pid;
    if (!exited) std::this_thread::sleep_for(10ms);
  }
  if (!exited) {
    kill(pid, SIGKILL);
    waitpid(pid, &status, 0);
  }
  ASSERT_TRUE(server.hung()) << "the run ended at the compile (exit " << (WIFEXITED(status) ? WEXITSTATUS(status) : -1)
                             << ") instead of answering it";
  server.hang_at(-1);
  server.release();
  auto results = tool_results(lines_of(run / "transcript.jsonl"));
  ASSERT_EQ(results.size(), 2u);
  EXPECT_EQ(results[1]["tool_name"], "compile");
  const std::string said = results[1]["content"].get<std::string>();
  EXPECT_NE(said.find("the compile was stopped after 10 s (limit)"), std::string::npos) << said;
  // The model read it before its next turn.
  EXPECT_EQ(server.requests().back()["messages"].back()["role"], "tool");

  std::vector<std::string> argv = {"env", "KAGENT_COMPILE_TIMEOUT=10"};
  for (auto& e : env_for(server)) argv.push_back(e);
  for (auto s : {(test::binary_dir() / "kagent").string(), std::string("optimize"), std::string("--without-gpu"),
                 std::string("--resume"), run.string(), std::string("--quiet")})
    argv.push_back(s);
  auto r = run_capture(argv, 600s);
  EXPECT_NE(r.exit_code, 3) << r.output;
  auto result = json::parse(read_text_file(run / "result.json"));
  EXPECT_EQ(result["stop_reason"], "finish") << r.output;
  results = tool_results(lines_of(run / "transcript.jsonl"));
  ASSERT_EQ(results.size(), 3u) << "the compile was answered once, not re-run on resume";
  EXPECT_EQ(results[2]["tool_name"], "finish");
}

// --tolerance: the model is told the tolerance it will be judged under, the result records it, and
// a resumed run keeps it (run.json) unless a flag changes it.
TEST_F(Optimize, ToleranceFlagReachesThePromptTheResultAndTheResume) {
  json bad = {{"content", "oops"}, {"tool_calls", {{{"name", "write_file"}, {"raw", "{not json"}}}}};
  SessionServer server({bad, bad, bad});
  auto run = dir.path() / "run";
  auto r = optimize(server, {op(), "--out", run.string(), "--no-shell", "--tolerance", "0.02"});
  const std::string task = server.requests().at(0)["messages"][1]["content"];
  EXPECT_NE(task.find("atol 0.02, rtol 0.02"), std::string::npos) << task;
  auto result = json::parse(read_text_file(run / "result.json"));
  EXPECT_EQ(result["tolerance"], json({{"atol", 0.02}, {"rtol", 0.02}})) << r.output;
  EXPECT_EQ(result["precision"], "fp32");
  EXPECT_EQ(json::parse(read_text_file(run / "run.json"))["tolerance"]["atol"], 0.02);
  // Resumed (the run stopped on malformed calls, not finish): the run's tolerance, then a flag's.
  SessionServer more({bad, bad, bad});
  optimize(more, {"--resume", run.string()});
  EXPECT_EQ(json::parse(read_text_file(run / "result.json"))["tolerance"]["atol"], 0.02);
  SessionServer again({bad, bad, bad});
  optimize(again, {"--resume", run.string(), "--atol", "0.5"});
  auto last = json::parse(read_text_file(run / "result.json"));
  EXPECT_EQ(last["tolerance"], json({{"atol", 0.5}, {"rtol", 0.02}}));
}

TEST_F(Optimize, MalformedCallsAreAnsweredThenStopTheRun) {
  json bad = {{"content", "oops"}, {"tool_calls", {{{"name", "write_file"}, {"raw", "{not json"}}}}};
  json unknown = {{"content", ""}, {"tool_calls", {{{"name", "launch_missiles"}, {"arguments", json::object()}}}}};
  json escape = {
      {"content", ""},
      {"tool_calls", {{{"name", "write_file"}, {"arguments", {{"path", "../escape.cu"}, {"content", "x"}}}}}}};
  SessionServer server({escape, bad, unknown, bad, bad});
  auto run = dir.path() / "run";
  auto r = optimize(server, {op(), "--out", run.string(), "--no-shell"});
  auto result = json::parse(read_text_file(run / "result.json"));
  EXPECT_EQ(result["stop_reason"], "3 malformed tool calls in a row") << r.output;
  EXPECT_EQ(result["turns"], 4) << "the refused path is the tool's error, not a malformed call: 3 bad calls end turn 4";
  EXPECT_FALSE(std::filesystem::exists(dir.path() / "escape.cu"));
  EXPECT_FALSE(std::filesystem::exists(run / "escape.cu"));
  auto results = tool_results(lines_of(run / "transcript.jsonl"));
  ASSERT_EQ(results.size(), 4u);
  EXPECT_NE(results[0]["content"].get<std::string>().find("escapes the workspace"), std::string::npos)
      << results[0].dump();
  EXPECT_NE(results[1]["content"].get<std::string>().find("not a JSON object"), std::string::npos) << results[1].dump();
  EXPECT_NE(results[2]["content"].get<std::string>().find("there is no tool 'launch_missiles'"), std::string::npos);
  // Each error went back to the model before its next turn.
  EXPECT_EQ(server.requests()[1]["messages"].back()["role"], "tool");
}

TEST_F(Optimize, BudgetsStopTheRun) {
  SessionServer server(demo_turns());
  auto r = optimize(server, {op(), "--out", (dir.path() / "turns").string(), "--turns", "2"});
  auto result = json::parse(read_text_file(dir.path() / "turns/result.json"));
  EXPECT_EQ(result["stop_reason"], "turn budget") << r.output;
  EXPECT_EQ(result["turns"], 2);
  r = optimize(server, {op(), "--out", (dir.path() / "tokens").string(), "--max-tokens", "2500"});
  result = json::parse(read_text_file(dir.path() / "tokens/result.json"));
  EXPECT_EQ(result["stop_reason"], "token budget") << r.output;
  EXPECT_EQ(result["turns"], 3) << "1100 tokens a turn: the third turn crosses 2500";
  // Numbers and plurals read right in the task's budget line.
  SessionServer one(demo_turns());
  optimize(one,
           {op(), "--out", (dir.path() / "one").string(), "--turns", "1", "--minutes", "1", "--max-tokens", "2000000"});
  const std::string task = one.requests().at(0)["messages"][1]["content"];
  EXPECT_NE(task.find("1 turn, 1 minute, 2000000 tokens"), std::string::npos) << task;
}

namespace {

// A provider that records every request and answers with read_file calls, so the conversation
// grows by one large tool result per turn.
class ReadingProvider : public llm::Provider {
 public:
  llm::ChatResponse chat(const llm::ChatRequest& rq) override {
    requests.push_back(rq);
    llm::ChatResponse r;
    r.message.role = llm::Role::assistant;
    llm::ToolCall c;
    c.id = "call_" + std::to_string(requests.size());
    c.name = requests.size() % 3 == 0 ? "evaluate" : "read_file";
    c.arguments = {{"path", "big.txt"}};
    r.message.tool_calls.push_back(c);
    return r;
  }
  std::string name() const override { return "reading"; }
  std::vector<llm::ChatRequest> requests;
};

// Stands in for evaluate: a result the compaction must keep (the latest evaluation of a path).
class FakeEvaluate : public model_tools::Tool {
 public:
  llm::ToolSpec spec() const override { return {"evaluate", "fake", {{"type", "object"}}}; }
  model_tools::ToolResult run(const json&) override { return {std::string(3000, 'e'), false, {{"tier", 1}}}; }
};

}  // namespace

TEST(AgentLoop, OldToolOutputsAreSummarizedNearTheContextBudget) {
  test::TempDir dir;
  model_tools::Workspace ws(dir.path() / "ws");
  std::string big;
  for (int i = 0; i < 300; ++i) big += "line " + std::to_string(i) + " of a large file\n";
  write_file_atomic(ws.root() / "big.txt", big);
  model_tools::ToolSet set = model_tools::make_file_tools(ws);
  set.push_back(std::make_unique<FakeEvaluate>());
  agent::Transcript transcript(dir.path() / "transcript.jsonl");
  agent::RunRecord record(dir.path(), transcript);
  agent::AgentOptions opt;
  opt.max_turns = 12;
  opt.context_chars = 20000;  // a few read_file outputs' worth
  opt.tool_output_cap = 4000;
  ReadingProvider provider;
  agent::Agent ag(provider, set, transcript, record, opt);
  agent::RunState state;
  state.messages.push_back({llm::Role::user, "read big.txt again and again", {}, "", "", false});
  agent::RunResult res = ag.run(state);
  EXPECT_EQ(res.stop_reason, "turn budget");
  ASSERT_EQ(provider.requests.size(), 12u);
  const auto& last = provider.requests.back().messages;
  size_t chars = 0, elided = 0, evaluations_kept = 0;
  for (const auto& m : last) {
    chars += m.content.size();
    if (m.content.rfind("[elided", 0) == 0) ++elided;
    if (m.tool_name == "evaluate" && m.content.rfind("[elided", 0) != 0) ++evaluations_kept;
  }
  EXPECT_LE(chars, opt.context_chars + 4 * opt.tool_output_cap) << "kept near the budget";
  EXPECT_GT(elided, 3u);
  EXPECT_GE(evaluations_kept, 1u) << "the latest evaluation of big.txt stays whole";
  // Each tool output was cut to the cap with a marker.
  for (const auto& m : last) {
    if (m.role == llm::Role::tool) {
      EXPECT_LE(m.content.size(), opt.tool_output_cap + 200);
    }
  }
}

namespace {

// Two calls in one turn: a slow tool that overruns the time budget, then another.
class TwoCallsProvider : public llm::Provider {
 public:
  llm::ChatResponse chat(const llm::ChatRequest& rq) override {
    requests.push_back(rq);
    llm::ChatResponse r;
    r.message.role = llm::Role::assistant;
    r.message.tool_calls.push_back({"call_slow", "slow", json::object(), "{}", ""});
    r.message.tool_calls.push_back({"call_next", "slow", json::object(), "{}", ""});
    return r;
  }
  std::string name() const override { return "two-calls"; }
  std::vector<llm::ChatRequest> requests;
};

// Sleeps until the deadline the loop gave it (as the shell and evaluate tools are cut off then).
class SlowTool : public model_tools::Tool {
 public:
  llm::ToolSpec spec() const override { return {"slow", "sleeps", {{"type", "object"}}}; }
  model_tools::ToolResult run(const json&) override {
    ++runs;
    seen = deadline();
    if (seen) std::this_thread::sleep_until(*seen + std::chrono::milliseconds(50));
    return {"slept", false, {}};
  }
  int runs = 0;
  std::optional<model_tools::Deadline> seen;
};

}  // namespace

// The time budget holds inside a turn (issue 16: `--minutes 0.05` ran 32 s): tools get the budget's
// end as their deadline, and calls after it are answered without running.
TEST(AgentLoop, TheTimeBudgetIsEnforcedInsideToolCalls) {
  test::TempDir dir;
  model_tools::ToolSet set;
  auto slow = std::make_unique<SlowTool>();
  SlowTool* slow_tool = slow.get();
  set.push_back(std::move(slow));
  agent::Transcript transcript(dir.path() / "transcript.jsonl");
  agent::RunRecord record(dir.path(), transcript);
  agent::AgentOptions opt;
  opt.max_minutes = 0.02;  // 1.2 s
  TwoCallsProvider provider;
  agent::Agent ag(provider, set, transcript, record, opt);
  agent::RunState state;
  state.messages.push_back({llm::Role::user, "go", {}, "", "", false});
  const auto t0 = std::chrono::steady_clock::now();
  agent::RunResult res = ag.run(state);
  const auto took = std::chrono::steady_clock::now() - t0;
  EXPECT_EQ(res.stop_reason, "time budget");
  EXPECT_EQ(provider.requests.size(), 1u);
  EXPECT_EQ(slow_tool->runs, 1) << "the second call came after the budget's end";
  ASSERT_TRUE(slow_tool->seen);
  EXPECT_LT(*slow_tool->seen - t0, std::chrono::milliseconds(1300));
  EXPECT_LT(took, std::chrono::seconds(10));
  auto events = agent::Transcript::read(dir.path() / "transcript.jsonl");
  bool answered = false;
  for (const auto& e : events)
    if (e.value("type", "") == "message" && e["message"].value("tool_call_id", "") == "call_next")
      answered = e["message"].value("content", "").find("time budget ran out") != std::string::npos;
  EXPECT_TRUE(answered);
}

// A kill during a write leaves a partial last line: it is cut before the next append, so the
// resume after that one still reads the whole transcript (it failed for good: "line 15 is not a
// JSON object").
TEST(Transcript, ATornTailIsRepairedBeforeAppending) {
  test::TempDir dir;
  const auto path = dir.path() / "transcript.jsonl";
  {
    agent::Transcript t(path);
    t.write({{"type", "message"}, {"n", 1}});
  }
  { std::ofstream(path, std::ios::app) << R"({"type": "message", "n": 2, "mess)"; }  // torn
  EXPECT_EQ(agent::Transcript::read(path).size(), 1u);
  {
    agent::Transcript t(path);  // the resume
    t.write({{"type", "resume"}});
  }
  auto events = agent::Transcript::read(path);
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[1]["type"], "resume");
  // A complete line that is not JSON is not a torn write: an error naming the file and line.
  { std::ofstream(path, std::ios::app) << "garbage\n"; }
  try {
    agent::Transcript::read(path);
    ADD_FAILURE();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("transcript.jsonl:3"), std::string::npos) << e.what();
  }
}

// A ModelNew solution the agent evaluates is kept as a .py (candidates/NNN.py, best.py), a plan as a
// .cu; the run has one best file, of the best candidate's kind, and a resumed run reads the kind back.
TEST(RunRecordFiles, EachCandidateKeepsItsKindsExtension) {
  test::TempDir dir;
  agent::Transcript transcript(dir.path() / "transcript.jsonl");
  agent::RunRecord record(dir.path(), transcript);
  EvalReport plan;
  plan.reward.tier = 1;
  record.evaluated("ws/relu.cu", "/*kagent {} */", plan);
  EXPECT_TRUE(std::filesystem::exists(dir.path() / "candidates/001.cu"));
  EXPECT_TRUE(std::filesystem::exists(dir.path() / "best.cu"));
  EvalReport solution;
  solution.reward.tier = 2;
  agent::CandidateScore s = record.evaluated("ws/relu_new.py", "class ModelNew: pass\n", solution);
  EXPECT_EQ(s.file(), "candidates/002.py");
  EXPECT_EQ(read_text_file(dir.path() / "candidates/002.py"), "class ModelNew: pass\n");
  EXPECT_EQ(read_text_file(dir.path() / "best.py"), "class ModelNew: pass\n");
  EXPECT_FALSE(std::filesystem::exists(dir.path() / "best.cu")) << "two best files";
  EXPECT_EQ(json(s).get<agent::CandidateScore>().best_file(), "best.py");
  EXPECT_EQ(json({{"number", 3}}).get<agent::CandidateScore>().file(), "candidates/003.cu");  // older transcripts
}
