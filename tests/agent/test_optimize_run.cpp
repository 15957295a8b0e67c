// The composition root's pieces without a model: the optimize options' JSON round trip (what
// bench --agent hands each child), the loop ending on a tool's result rather than its name, and
// the transcript's typed events and version.
#include <gtest/gtest.h>

#include <algorithm>

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "kagent/agent/agent.hpp"
#include "kagent/agent/optimize_run.hpp"
#include "kagent/agent/result_file.hpp"
#include "kagent/agent/transcript.hpp"
#include "kagent/agent/transcript_events.hpp"
#include "kagent/common/error.hpp"
#include "kagent/common/files.hpp"
#include "test_util.hpp"

using namespace kagent;
using json = nlohmann::json;

TEST(OptimizeOptions, JsonRoundTripKeepsEverySetting) {
  agent::OptimizeRunOptions o;
  o.op = "/ops/softmax/op.json";
  o.llm = {"openai", "http://127.0.0.1:8080/v1", "gemma", "MY_KEY", "/tmp/turns.jsonl", "required", true, 1 << 20, 7};
  o.llm.context_tokens = 65536;
  o.turns = 7;
  o.minutes = 0.1 + 0.2;  // not exactly 0.3: written so it reads back to the same double
  o.max_tokens = int64_t{1} << 40;
  o.out = "runs/a";
  o.resume = "runs/b";
  o.prompts = "p";
  o.skills = "s";
  o.arch = "sm_90a";
  o.precision = "bf16";
  o.gpu = 3;
  o.no_shell = true;
  o.overrides.atol = 1.0 / 3.0;
  const json j = o;
  const auto back = json::parse(j.dump()).get<agent::OptimizeRunOptions>();
  EXPECT_EQ(json(back), j);
  EXPECT_EQ(back.minutes, o.minutes);
  EXPECT_EQ(*back.overrides.atol, *o.overrides.atol);
  EXPECT_FALSE(back.overrides.rtol);
  EXPECT_EQ(back.llm.tool_choice, "required");
  EXPECT_TRUE(back.llm.allow_op_endpoint);
  EXPECT_EQ(back.llm.max_reply_bytes, 1 << 20);
  EXPECT_EQ(back.llm.max_tool_calls, 7);
  EXPECT_EQ(back.llm.context_tokens, 65536) << "bench --agent hands the window to each child";
  EXPECT_EQ(back.max_tokens, o.max_tokens);
  // Defaults round-trip too, and a missing key is its default.
  EXPECT_EQ(json(json(agent::OptimizeRunOptions{}).get<agent::OptimizeRunOptions>()),
            json(agent::OptimizeRunOptions{}));
  EXPECT_EQ(json::object().get<agent::OptimizeRunOptions>().gpu, 0);
}

TEST(OptimizeOptions, AFileWithAnUnknownKeyOrWrongTypeIsBadInputNamingIt) {
  test::TempDir dir;
  dir.write("a.json", R"({"turns": 3, "trun": 4})");
  try {
    agent::load_optimize_options(dir.path() / "a.json");
    FAIL() << "an unknown key was accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("a.json"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("'trun'"), std::string::npos) << e.what();
  }
  dir.write("b.json", R"({"llm": {"model": 5}})");
  EXPECT_THROW(agent::load_optimize_options(dir.path() / "b.json"), InputError);
  dir.write("c.json", R"([1, 2])");
  EXPECT_THROW(agent::load_optimize_options(dir.path() / "c.json"), InputError);
}

namespace {

// Calls the tools named, one a turn (the last again once the list is used up).
class CallingProvider : public llm::Provider {
 public:
  explicit CallingProvider(std::vector<std::string> names) : names_(std::move(names)) {}
  llm::ChatResponse chat(const llm::ChatRequest&) override {
    llm::ChatResponse r;
    r.message.role = llm::Role::assistant;
    const std::string& name = names_[std::min(calls_, names_.size() - 1)];
    r.message.tool_calls.push_back({"call_" + std::to_string(calls_++), name, json::object(), "{}", ""});
    return r;
  }
  std::string name() const override { return "calling"; }
  size_t calls() const { return calls_; }

 private:
  std::vector<std::string> names_;
  size_t calls_ = 0;
};

// A tool whose result may end the run, whatever its name.
class NamedTool : public model_tools::Tool {
 public:
  NamedTool(std::string name, bool ends_run) : name_(std::move(name)), ends_run_(ends_run) {}
  llm::ToolSpec spec() const override { return {name_, "test", {{"type", "object"}}}; }
  model_tools::ToolResult run(const json&) override { return {"ok", false, {}, ends_run_, std::nullopt}; }

 private:
  std::string name_;
  bool ends_run_;
};

agent::RunResult run_with(const std::vector<std::pair<std::string, bool>>& tools, std::vector<std::string> calls) {
  test::TempDir dir;
  model_tools::ToolSet set;
  for (const auto& [name, ends] : tools) set.push_back(std::make_unique<NamedTool>(name, ends));
  agent::Transcript transcript(dir.path() / "transcript.jsonl");
  agent::RunRecord record(dir.path(), transcript);
  agent::AgentOptions opt;
  opt.max_turns = 3;
  CallingProvider provider(std::move(calls));
  agent::Agent ag(provider, set, transcript, record, opt);
  agent::RunState state;
  state.messages.push_back({llm::Role::user, "go", {}, "", "", false});
  agent::RunResult res = ag.run(state);
  res.requests = static_cast<int>(provider.calls());
  return res;
}

}  // namespace

// The loop learns that the run is over from the result (ends_run), not from the tool's name.
TEST(AgentLoop, TheRunEndsOnAToolResultThatSaysSo) {
  agent::RunResult ended = run_with({{"done", true}}, {"done"});
  EXPECT_EQ(ended.stop_reason, "finish");
  EXPECT_EQ(ended.turns, 1);
  agent::RunResult named = run_with({{"finish", false}}, {"finish"});
  EXPECT_EQ(named.stop_reason, "turn budget") << "a tool named finish whose result does not end the run";
  EXPECT_EQ(named.turns, 3);
}

TEST(TranscriptEvents, EachEventRoundTripsThroughItsStruct) {
  agent::StartEvent start{agent::kTranscriptVersion, "softmax", "openai gemma", 40, 60.5, 1000, "available"};
  EXPECT_EQ(json(json(start).get<agent::StartEvent>()), json(start));
  EXPECT_EQ(json(start)["type"], "start");
  EXPECT_EQ(json(start)["budget"]["minutes"], 60.5);

  llm::Message m{llm::Role::assistant, "hello", {}, "", "", false};
  agent::MessageEvent reply{m, agent::ReplyFacts{4, "stop", {100, 7, true}, 0.25, 2, false}, std::nullopt};
  const json rj = reply;
  EXPECT_EQ(rj["turn"], 4);
  EXPECT_EQ(rj["tokens_estimated"], true);
  EXPECT_FALSE(rj.contains("record"));
  EXPECT_EQ(json(rj.get<agent::MessageEvent>()), rj);

  agent::MessageEvent tool{m, std::nullopt, agent::ToolResultFacts{json{{"tier", 2}}, true}};
  const json tj = tool;
  EXPECT_FALSE(tj.contains("turn"));
  EXPECT_EQ(json(tj.get<agent::MessageEvent>()), tj);
  agent::MessageEvent opening{m, std::nullopt, std::nullopt};
  EXPECT_EQ(json(opening).size(), 2u) << json(opening).dump();

  agent::CandidateScore score;
  score.number = 3;
  score.path = "k.cu";
  score.score.tier = 2;
  score.score.speedup_vs_eager = 1.5;
  agent::EvaluationEvent ev{score, true, json{{"tier", 2}}};
  EXPECT_EQ(json(json(ev).get<agent::EvaluationEvent>()), json(ev));
  for (const json& e : {json(agent::EndpointErrorEvent{3, 3, "no endpoint"}), json(agent::SessionEndEvent{1.5}),
                        json(agent::StopEvent{"finish", 4}), json(agent::ResumeEvent{1, 4, "x"})})
    EXPECT_EQ(std::visit([](const auto& v) { return json(v); }, agent::parse_event(e)), e) << e.dump();
  EXPECT_TRUE(std::holds_alternative<agent::OtherEvent>(agent::parse_event(json{{"type", "future"}})));
}

TEST(TranscriptEvents, ANewerVersionIsRefusedNamingTheFileAndBothVersions) {
  test::TempDir dir;
  const auto path = dir.path() / "transcript.jsonl";
  // A transcript written before versions were recorded (no "version") is version 1 and loads.
  dir.write(
      "transcript.jsonl",
      R"({"type": "start", "op": "x", "llm": "y", "budget": {"turns": 1, "minutes": 1, "tokens": 0}, "gpu": "available", "t": 1})"
      "\n"
      R"({"type": "message", "message": {"role": "user", "content": "go"}, "t": 2})"
      "\n");
  auto old = agent::Transcript::read(path);
  EXPECT_EQ(agent::check_transcript_version(old, path), 1);
  EXPECT_EQ(agent::RunState::from_transcript(old).messages.size(), 1u);
  // What this kagent writes says its version.
  {
    agent::Transcript t(path);
    t.write(agent::ResumeEvent{agent::kTranscriptVersion, 0, "z"});
  }
  EXPECT_EQ(agent::Transcript::read(path).back()["version"], agent::kTranscriptVersion);
  // A newer one is refused.
  {
    agent::Transcript t(path);
    t.write(json{{"type", "resume"}, {"version", agent::kTranscriptVersion + 1}, {"turns", 0}, {"llm", "z"}});
  }
  try {
    agent::Transcript::read(path);
    FAIL() << "a newer transcript was read";
  } catch (const InputError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find(path.string()), std::string::npos) << what;
    EXPECT_NE(what.find(std::to_string(agent::kTranscriptVersion + 1)), std::string::npos) << what;
    EXPECT_NE(what.find(fmt::format("version {}", agent::kTranscriptVersion)), std::string::npos) << what;
  }
}

// result.json: one struct with a version; files from before the version read as version 1, a
// newer one is refused naming both versions.
TEST(ResultFile, RoundTripsOldFilesReadAndNewerRefused) {
  agent::ResultFile r;
  r.op = "softmax";
  r.stop_reason = "finish";
  r.turns = 7;
  r.evaluations = 3;
  r.final_path = "best.cu";
  r.precision = "fp32";
  r.tolerance = Tolerance{1e-4, 1e-3};
  agent::CandidateScore best;
  best.number = 2;
  best.path = "k.py";
  best.extension = ".py";
  best.score.tier = 2;
  best.score.candidate_ms = 0.5;
  best.score.flags = {"weak reference: output 'out' ..."};
  r.best = best;
  r.best_by_turn = {{1, 0.5}, {4, 1.25}};
  const nlohmann::json j = r;
  EXPECT_EQ(j.at("version"), 2);
  EXPECT_EQ(j.at("best").at("file"), "candidates/002.py");
  EXPECT_EQ(j.at("tolerance"), nlohmann::json({{"atol", 1e-4}, {"rtol", 1e-3}}));
  const auto back = j.get<agent::ResultFile>();
  EXPECT_EQ(nlohmann::json(back), j);
  EXPECT_EQ(back.best, r.best);
  EXPECT_EQ(back.best_by_turn, r.best_by_turn);

  nlohmann::json old = j;
  old.erase("version");
  EXPECT_EQ(old.get<agent::ResultFile>().turns, 7);

  nlohmann::json newer = j;
  newer["version"] = 3;
  try {
    (void)newer.get<agent::ResultFile>();
    ADD_FAILURE() << "a newer version was read";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("result version 3; this kagent reads version 2"), std::string::npos)
        << e.what();
  }
  nlohmann::json wrong = j;
  wrong["turns"] = "seven";
  EXPECT_THROW((void)wrong.get<agent::ResultFile>(), InputError);
  wrong = j;
  wrong["best"]["tier"] = "two";
  try {
    (void)wrong.get<agent::ResultFile>();
    ADD_FAILURE() << "a best with a text tier was read";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("best: tier"), std::string::npos) << e.what();
  }
}

// A version-1 result.json, as kagent wrote it before the score was typed: its best reads with its
// time under the current name.
TEST(ResultFile, VersionOneFileReads) {
  const auto r = agent::read_result_file(test::source_dir() / "tests/fixtures/records/result_v1.json");
  EXPECT_EQ(r.version, 1);
  EXPECT_EQ(r.turns, 5);
  EXPECT_EQ(r.tolerance, Tolerance{});
  ASSERT_TRUE(r.best.has_value());
  EXPECT_EQ(r.best->number, 2);
  EXPECT_EQ(r.best->path, "relu_v2.cu");
  EXPECT_EQ(r.best->best_file(), "best.cu");
  EXPECT_EQ(r.best->score.tier, 2);
  EXPECT_EQ(r.best->score.candidate_ms, 1.25);
  EXPECT_EQ(r.best->score.speedup_vs_compile, 0.9);
  EXPECT_TRUE(r.best->score.device.empty());
  EXPECT_TRUE(r.best_by_turn.empty());
}
