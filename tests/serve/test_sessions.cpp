// The sessions of kagent serve without a GPU (the service answers evaluations "no GPU"): a scripted
// episode through every tool over HTTP with the observations kagent optimize's tools give, escapes
// refused as observations, bad requests named, close idempotent, reaping, and 200 sessions opened,
// stepped and closed by 32 concurrent clients with nothing left behind.
#include <gtest/gtest.h>
#include <httplib.h>

#include <atomic>
#include <cmath>
#include <fstream>
#include <future>
#include <map>
#include <thread>

#include <fmt/format.h>

#include "kagent/agent/transcript.hpp"
#include "kagent/common/files.hpp"
#include "service_fixture.hpp"

using namespace kagent;

namespace {

class SessionsTest : public test::ServiceFixture {
 protected:
  void SetUp() override {
    test::ServiceFixture::SetUp();
    std::filesystem::create_directories(tmp / "root/ops");
    std::filesystem::copy(test::source_dir() / "examples/optimize_demo", tmp / "root/ops/demo",
                          std::filesystem::copy_options::recursive);
  }
  // A service without a GPU whose sessions live under tmp/sessions.
  void start_sessions(size_t max_sessions = 256, double idle_s = 900) {
    serve::ServeOptions o;
    o.unavailable = "no GPU to evaluate on: none in this test";
    o.sessions.dir = tmp / "sessions";
    o.sessions.max_sessions = max_sessions;
    o.sessions.idle_s = idle_s;
    start(o);
  }
  httplib::Client client() {
    httplib::Client c("127.0.0.1", port);
    c.set_read_timeout(120, 0);
    return c;
  }
  nlohmann::json post(httplib::Client& c, const std::string& path, const nlohmann::json& body, int want = 200) {
    auto r = c.Post(path, body.dump(), "application/json");
    EXPECT_TRUE(r) << path;
    if (!r) return {};
    EXPECT_EQ(r->status, want) << path << ": " << r->body;
    return nlohmann::json::parse(r->body);
  }
  std::string open(httplib::Client& c) {
    auto j = post(c, "/v1/sessions", {{"problem", "ops/demo/op.json"}});
    return j.value("session_id", "");
  }
  // The recorded replies of the scripted demo (examples/optimize_demo/session.jsonl), as a policy.
  static std::vector<nlohmann::json> script() {
    std::vector<nlohmann::json> turns;
    std::ifstream in(test::source_dir() / "examples/optimize_demo/session.jsonl");
    for (std::string line; std::getline(in, line);)
      if (!line.empty()) turns.push_back(nlohmann::json::parse(line));
    return turns;
  }
};

TEST_F(SessionsTest, OpensWithTheOptimizeOpeningAndTools) {
  start_sessions();
  auto c = client();
  auto j = post(c, "/v1/sessions", {{"problem", "ops/demo/op.json"}, {"reward", "best_tier"}});
  ASSERT_TRUE(j.contains("session_id"));
  ASSERT_EQ(j["messages"].size(), 2u);
  EXPECT_EQ(j["messages"][0]["role"], "system");
  EXPECT_EQ(j["messages"][1]["role"], "user");
  // The task names the operator and its tensors, as kagent optimize's does.
  const std::string task = j["messages"][1]["content"];
  EXPECT_NE(task.find("softmax_rows_demo"), std::string::npos);
  EXPECT_NE(task.find("4096"), std::string::npos);
  std::set<std::string> names;
  for (const auto& t : j["tools"]) names.insert(t["function"]["name"].get<std::string>());
  for (const char* want : {"read_file", "write_file", "edit_file", "compile", "evaluate", "profile", "finish"})
    EXPECT_TRUE(names.count(want)) << want;
  EXPECT_EQ(j["limits"]["steps"], 150);
  EXPECT_EQ(j["reward"], "best_tier");
  auto state = c.Get(("/v1/sessions/" + j["session_id"].get<std::string>()).c_str());
  ASSERT_TRUE(state);
  EXPECT_EQ(nlohmann::json::parse(state->body)["state"], "open");
}

TEST_F(SessionsTest, AScriptedEpisodeRunsEveryToolAndEndsAtFinish) {
  start_sessions();
  auto c = client();
  const std::string id = open(c);
  ASSERT_FALSE(id.empty());
  const std::string step = "/v1/sessions/" + id + "/step";
  nlohmann::json last;
  for (const auto& turn : script()) {
    last = post(c, step, {{"tool_calls", turn["tool_calls"]}});
    ASSERT_EQ(last["observations"].size(), turn["tool_calls"].size());
    const auto& o = last["observations"][0];
    const std::string name = turn["tool_calls"][0]["name"];
    if (name == "compile" && last["steps"] == 2) {
      // The first version has a compile error: NVRTC's log with the line, as the agent's tool says it.
      EXPECT_TRUE(o["is_error"].get<bool>());
      EXPECT_NE(o["content"].get<std::string>().find("num_warps"), std::string::npos) << o["content"];
    }
    if (name == "evaluate") {
      EXPECT_TRUE(o["is_error"].get<bool>());
      EXPECT_NE(o["content"].get<std::string>().find("evaluate is unavailable: no GPU"), std::string::npos);
    }
    if (name != "finish") {
      EXPECT_FALSE(last["done"].get<bool>());
    }
  }
  EXPECT_TRUE(last["done"].get<bool>());
  EXPECT_EQ(last["done_reason"], "finish");
  EXPECT_TRUE(last["reward"].is_null());  // nothing to measure it with
  EXPECT_NE(last["reward_note"].get<std::string>().find("no GPU"), std::string::npos);
  // A step after the end is refused; close answers the summary, twice the same.
  post(c, step, {{"tool_call", {{"name", "list_files"}, {"arguments", nlohmann::json::object()}}}}, 409);
  auto first = post(c, "/v1/sessions/" + id + "/close", nlohmann::json::object());
  auto again = post(c, "/v1/sessions/" + id + "/close", nlohmann::json::object());
  EXPECT_EQ(first["steps"], again["steps"]);
  EXPECT_EQ(first["done_reason"], "finish");
  EXPECT_EQ(first["final_path"], "softmax.cu");
  // The episode's record stays under --sessions-dir; its workspace is gone.
  EXPECT_TRUE(std::filesystem::exists(tmp / "sessions" / id / "transcript.jsonl"));
  EXPECT_TRUE(std::filesystem::exists(tmp / "sessions" / id / "summary.json"));
  EXPECT_FALSE(std::filesystem::exists(tmp / "sessions" / id / "workspace"));
}

TEST_F(SessionsTest, TextRepliesAreReadAsTheAgentLoopReadsThem) {
  start_sessions();
  auto c = client();
  const std::string id = open(c);
  const std::string step = "/v1/sessions/" + id + "/step";
  auto j = post(c, step,
                {{"text",
                  "I will look first.\n<tool_call>{\"name\": \"write_file\", \"arguments\": {\"path\": "
                  "\"a.txt\", \"content\": \"hi\"}}</tool_call>\n<tool_call>{\"name\": \"read_file\", "
                  "\"arguments\": {\"path\": \"a.txt\"}}</tool_call>"}});
  ASSERT_EQ(j["observations"].size(), 2u);
  EXPECT_FALSE(j["observations"][1]["is_error"].get<bool>());
  EXPECT_NE(j["observations"][1]["content"].get<std::string>().find("hi"), std::string::npos);
  // A reply without a readable call gets the agent loop's words, not a 500.
  j = post(c, step, {{"text", "<tool_call>{not json</tool_call>"}});
  EXPECT_TRUE(j["observations"].empty());
  EXPECT_NE(j["feedback"].get<std::string>().find("tool call"), std::string::npos) << j["feedback"];
  // A malformed call is an error observation.
  j = post(c, step, {{"tool_call", {{"name", "no_such_tool"}, {"arguments", "{}"}}}});
  EXPECT_TRUE(j["observations"][0]["is_error"].get<bool>());
  EXPECT_NE(j["observations"][0]["content"].get<std::string>().find("there is no tool"), std::string::npos);
  j = post(c, step, {{"tool_call", {{"name", "read_file"}, {"arguments", "[1, 2]"}}}});
  EXPECT_TRUE(j["observations"][0]["is_error"].get<bool>());
  post(c, "/v1/sessions/" + id + "/close", nlohmann::json::object());
}

TEST_F(SessionsTest, EscapesAreRefusedAsObservations) {
  start_sessions();
  auto c = client();
  const std::string id = open(c);
  const std::string step = "/v1/sessions/" + id + "/step";
  for (const nlohmann::json& call :
       {nlohmann::json{{"name", "read_file"}, {"arguments", {{"path", "../../../../etc/passwd"}}}},
        nlohmann::json{{"name", "read_file"}, {"arguments", {{"path", "/etc/passwd"}}}},
        nlohmann::json{{"name", "write_file"}, {"arguments", {{"path", "../escape.txt"}, {"content", "x"}}}}}) {
    auto j = post(c, step, {{"tool_call", call}});
    EXPECT_TRUE(j["observations"][0]["is_error"].get<bool>()) << call.dump();
    EXPECT_EQ(j["observations"][0]["content"].get<std::string>().find("root:"), std::string::npos);
  }
  EXPECT_FALSE(std::filesystem::exists(tmp / "sessions" / id / "escape.txt"));
  // The shell, where this machine can sandbox it: the host's files are not there (the folders down to
  // the workspace are, empty but for the way down: the problems root beside them is not).
  auto j = post(c, step,
                {{"tool_call",
                  {{"name", "shell"},
                   {"arguments", {{"command", "cat /etc/shadow; ls " + tmp.path().string() + "; echo done"}}}}}});
  const std::string out = j["observations"][0]["content"];
  EXPECT_EQ(out.find("root:"), std::string::npos) << out;
  EXPECT_EQ(out.find("root"), std::string::npos) << out;
  post(c, "/v1/sessions/" + id + "/close", nlohmann::json::object());
}

TEST_F(SessionsTest, BadRequestsNameTheField) {
  start_sessions(2);
  auto c = client();
  auto j = post(c, "/v1/sessions", {{"problem", "ops/demo/op.json"}, {"limits", {{"steps", 0}}}}, 400);
  EXPECT_EQ(j["error"]["field"], "limits.steps");
  j = post(c, "/v1/sessions", {{"problem", "ops/demo/op.json"}, {"reward", "speed"}}, 400);
  EXPECT_EQ(j["error"]["field"], "reward");
  j = post(c, "/v1/sessions", {{"problem", "ops/demo/op.json"}, {"limitz", 1}}, 400);
  EXPECT_EQ(j["error"]["field"], "limitz");
  j = post(c, "/v1/sessions", {{"problem", "ops/demo/op.json"}, {"kind", "modelnew"}}, 400);
  EXPECT_EQ(j["error"]["field"], "kind");
  j = post(c, "/v1/sessions", {{"problem", "ops/demo/op.json"}, {"seed", 7}}, 400);
  EXPECT_EQ(j["error"]["field"], "seed");
  EXPECT_NE(j["error"]["message"].get<std::string>().find("fresh inputs"), std::string::npos) << j.dump();
  j = post(c, "/v1/sessions", {{"problem", "no/such.json"}}, 404);
  j = post(c, "/v1/sessions/0123/step", {{"text", "x"}}, 404);
  EXPECT_EQ(j["error"]["field"], "session_id");
  const std::string id = open(c);
  j = post(c, "/v1/sessions/" + id + "/step", {{"text", "x"}, {"tool_calls", nlohmann::json::array()}}, 400);
  EXPECT_EQ(j["error"]["field"], "body");
  j = post(c, "/v1/sessions/" + id + "/step", {{"tool_calls", nlohmann::json::array()}}, 400);
  EXPECT_EQ(j["error"]["field"], "tool_calls");
  j = post(c, "/v1/sessions/" + id + "/step", {{"tool_call", {{"arguments", "{}"}}}}, 400);
  EXPECT_EQ(j["error"]["field"], "tool_call.name");
  auto r = c.Get("/v1/sessions/" + id + "/step");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 405);
  // --max-sessions 2: the third is 429.
  open(c);
  post(c, "/v1/sessions", {{"problem", "ops/demo/op.json"}}, 429);
}

TEST_F(SessionsTest, IdleSessionsAreReaped) {
  start_sessions(256, 1.0);
  auto c = client();
  const std::string id = open(c);
  ASSERT_FALSE(id.empty());
  ASSERT_TRUE(std::filesystem::exists(tmp / "sessions" / id / "workspace"));
  for (int i = 0; i < 100 && std::filesystem::exists(tmp / "sessions" / id / "workspace"); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_FALSE(std::filesystem::exists(tmp / "sessions" / id / "workspace"));
  auto j = post(c, "/v1/sessions/" + id + "/close", nlohmann::json::object());
  EXPECT_EQ(j["done_reason"], "reaped: idle");
}

TEST_F(SessionsTest, TwoHundredSessionsFromThirtyTwoClients) {
  start_sessions(256);
  std::atomic<int> closed{0}, failures{0};
  std::vector<std::thread> clients;
  for (int t = 0; t < 32; ++t)
    clients.emplace_back([&, t] {
      httplib::Client c("127.0.0.1", port);
      c.set_read_timeout(120, 0);
      for (int n = t; n < 200; n += 32) {
        auto r = c.Post("/v1/sessions", nlohmann::json{{"problem", "ops/demo/op.json"}}.dump(), "application/json");
        if (!r || r->status != 200) {
          ++failures;
          continue;
        }
        const std::string id = nlohmann::json::parse(r->body)["session_id"];
        const std::string file = fmt::format("k{}.cu", n);
        auto s = c.Post("/v1/sessions/" + id + "/step",
                        nlohmann::json{{"tool_calls",
                                        {{{"name", "write_file"}, {"arguments", {{"path", file}, {"content", "x"}}}},
                                         {{"name", "list_files"}, {"arguments", nlohmann::json::object()}}}}}
                            .dump(),
                        "application/json");
        if (!s || s->status != 200 ||
            nlohmann::json::parse(s->body)["observations"][1]["content"].get<std::string>().find(file) ==
                std::string::npos)
          ++failures;
        auto x = c.Post("/v1/sessions/" + id + "/close", "{}", "application/json");
        if (!x || x->status != 200)
          ++failures;
        else
          ++closed;
      }
    });
  for (auto& t : clients) t.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(closed.load(), 200);
  // No workspace is left, and every episode's transcript is kept.
  int transcripts = 0, workspaces = 0;
  for (const auto& e : std::filesystem::directory_iterator(tmp / "sessions")) {
    transcripts += std::filesystem::exists(e.path() / "transcript.jsonl");
    workspaces += std::filesystem::exists(e.path() / "workspace");
  }
  EXPECT_EQ(transcripts, 200);
  EXPECT_EQ(workspaces, 0);
}

}  // namespace

namespace {

// Sessions whose evaluations go through the queue to the fake backend (tests/fake_backend.hpp):
// the verdict a candidate's text asks for, rendered as the evaluate tool renders a report.
class SessionEvaluationTest : public SessionsTest {
 protected:
  void start_with_gpu(double idle_s = 900) {
    serve::ServeOptions o;
    o.sessions.dir = tmp / "sessions";
    o.sessions.idle_s = idle_s;
    start(o);
  }
  // The demo's softmax candidate as its script leaves it (correct), with a verdict for the fake.
  static std::string candidate(const std::string& verdict) {
    std::string src = script()[0]["tool_calls"][0]["arguments"]["content"];
    for (auto [from, to] : {std::pair<std::string, std::string>{"i < num_warps;", "i < blockDim.x / 32;"},
                            {"yr[c] = expf(xr[c] - m);", "yr[c] = expf(xr[c] - m) * inv;"}})
      src.replace(src.find(from), from.size(), to);
    return src + "\n// " + verdict + "\n";
  }
  static nlohmann::json call(const std::string& name, nlohmann::json args) {
    return {{"tool_call", {{"name", name}, {"arguments", std::move(args)}}}};
  }
};

TEST_F(SessionEvaluationTest, EvaluationsGoThroughTheQueueAndFinishIsTheReward) {
  start_with_gpu();
  auto c = client();
  auto opened = post(c, "/v1/sessions",
                     {{"problem", "ops/demo/op.json"}, {"reward", "log_speedup"}, {"limits", {{"evaluations", 2}}}});
  const std::string step = "/v1/sessions/" + opened["session_id"].get<std::string>() + "/step";
  post(c, step, call("write_file", {{"path", "k.cu"}, {"content", candidate("tier 3 speedup 2.0")}}));
  auto j = post(c, step, call("evaluate", {{"path", "k.cu"}}));
  const std::string seen = j["observations"][0]["content"];
  EXPECT_FALSE(j["observations"][0]["is_error"].get<bool>()) << seen;
  EXPECT_NE(seen.find("tier 3"), std::string::npos) << seen;
  j = post(c, step, call("profile", {{"path", "k.cu"}}));
  EXPECT_FALSE(j["observations"][0]["is_error"].get<bool>()) << j["observations"][0]["content"];
  // Two evaluations were allowed: the third is refused, not run.
  const int before = state.calls.load();
  j = post(c, step, call("evaluate", {{"path", "k.cu"}}));
  EXPECT_TRUE(j["observations"][0]["is_error"].get<bool>());
  EXPECT_NE(j["observations"][0]["content"].get<std::string>().find("spent"), std::string::npos);
  EXPECT_EQ(state.calls.load(), before);
  EXPECT_EQ(j["evaluations"], 2);
  // finish evaluates the final candidate once more: the reward is ln(2.0).
  j = post(c, step, call("finish", {{"path", "k.cu"}}));
  EXPECT_TRUE(j["done"].get<bool>());
  EXPECT_EQ(j["done_reason"], "finish");
  ASSERT_TRUE(j["reward"].is_number()) << j.dump();
  EXPECT_NEAR(j["reward"].get<double>(), std::log(2.0), 1e-9);
  EXPECT_EQ(j["final"]["tier"], 3);
  EXPECT_EQ(state.calls.load(), before + 1);
  std::vector<std::string> reports;
  for (const auto& e : state.events)
    if (e.rfind("report", 0) == 0) reports.push_back(e);
  EXPECT_EQ(reports, (std::vector<std::string>{"report score", "report profile", "report score"}));
}

TEST_F(SessionEvaluationTest, AnEpisodeOfOneKindRefusesTheOthersCandidatesUnrun) {
  start_with_gpu();
  auto c = client();
  auto opened = post(c, "/v1/sessions", {{"problem", "ops/demo/op.json"}, {"kind", "plan"}});
  EXPECT_EQ(opened["kind"], "plan");
  const std::string step = "/v1/sessions/" + opened["session_id"].get<std::string>() + "/step";
  const std::string modelnew =
      "import torch\nclass ModelNew(torch.nn.Module):\n    def forward(self, x):\n        return torch.softmax(x, 1)\n";
  post(c, step, call("write_file", {{"path", "m.py"}, {"content", modelnew}}));
  for (const char* tool : {"evaluate", "profile", "finish"}) {
    auto j = post(c, step, call(tool, {{"path", "m.py"}}));
    const std::string seen = j["observations"][0]["content"];
    EXPECT_TRUE(j["observations"][0]["is_error"].get<bool>()) << tool << ": " << seen;
    EXPECT_NE(seen.find("takes plan candidates only (.cu files)"), std::string::npos) << tool << ": " << seen;
    EXPECT_FALSE(j["done"].get<bool>()) << tool;
  }
  EXPECT_EQ(state.calls.load(), 0);  // nothing of the other kind reached the GPU
  // The kind it takes runs as before.
  post(c, step, call("write_file", {{"path", "k.cu"}, {"content", candidate("tier 2 speedup 1.5")}}));
  auto j = post(c, step, call("finish", {{"path", "k.cu"}}));
  EXPECT_TRUE(j["done"].get<bool>());
  EXPECT_EQ(j["final"]["tier"], 2);
}

TEST_F(SessionEvaluationTest, AStepLimitEndsTheEpisodeWithTheBestCandidatesTier) {
  start_with_gpu();
  auto c = client();
  auto opened = post(c, "/v1/sessions", {{"problem", "ops/demo/op.json"}, {"limits", {{"steps", 3}}}});
  const std::string id = opened["session_id"];
  const std::string step = "/v1/sessions/" + id + "/step";
  post(c, step,
       {{"tool_calls",
         {{{"name", "write_file"}, {"arguments", {{"path", "a.cu"}, {"content", candidate("tier 2 speedup 1.2")}}}},
          {{"name", "write_file"}, {"arguments", {{"path", "b.cu"}, {"content", candidate("tier -1")}}}}}}});
  post(c, step, call("evaluate", {{"path", "a.cu"}}));
  auto j = post(c, step, call("evaluate", {{"path", "b.cu"}}));
  EXPECT_TRUE(j["observations"][0]["is_error"].get<bool>());  // wrong: tier -1
  EXPECT_TRUE(j["done"].get<bool>());
  EXPECT_EQ(j["done_reason"], "step limit");
  EXPECT_EQ(j["reward"], 2);  // the best evaluated candidate, a.cu
  EXPECT_EQ(j["best"]["path"], "a.cu");
  // The transcript holds the episode as kagent optimize writes one: the opening, the replies,
  // the results, the evaluations and the stop.
  auto events = agent::Transcript::read(tmp / "sessions" / id / "transcript.jsonl");
  std::map<std::string, int> types;
  for (const auto& e : events) types[e["type"].get<std::string>()] += 1;
  EXPECT_EQ(types["start"], 1);
  EXPECT_EQ(types["evaluation"], 2);
  EXPECT_EQ(types["stop"], 1);
  EXPECT_EQ(types["message"], 2 + 3 + 4);
  EXPECT_TRUE(std::filesystem::exists(tmp / "sessions" / id / "best.cu"));
}

TEST_F(SessionEvaluationTest, AFinishWaitingForTheGpuHoldsNoOtherSessionBack) {
  start_with_gpu(2.0);  // the reaper looks every half second
  auto c = client();
  const std::string a = post(c, "/v1/sessions", {{"problem", "ops/demo/op.json"}})["session_id"];
  const std::string b = post(c, "/v1/sessions", {{"problem", "ops/demo/op.json"}})["session_id"];
  // The fake backend holds an evaluation whose text starts with "block" until released.
  post(c, "/v1/sessions/" + a + "/step",
       call("write_file", {{"path", "k.cu"}, {"content", "block\n" + candidate("tier 2 speedup 1.5")}}));
  auto finishing = std::async(std::launch::async, [&] {
    auto c2 = client();
    return post(c2, "/v1/sessions/" + a + "/step", call("finish", {{"path", "k.cu"}}));
  });
  ASSERT_TRUE(state.wait_blocked(1));
  std::this_thread::sleep_for(std::chrono::milliseconds(700));  // a reaper pass while it waits
  const auto t0 = std::chrono::steady_clock::now();
  auto j = post(c, "/v1/sessions/" + b + "/step", call("list_files", nlohmann::json::object()));
  EXPECT_FALSE(j["observations"][0]["is_error"].get<bool>());
  auto st = c.Get(("/v1/sessions/" + a).c_str());
  ASSERT_TRUE(st);
  EXPECT_EQ(nlohmann::json::parse(st->body)["state"], "stepping");
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 1.5);
  state.release();
  auto done = finishing.get();
  EXPECT_TRUE(done["done"].get<bool>());
  EXPECT_EQ(done["reward"], 2);
}

}  // namespace
