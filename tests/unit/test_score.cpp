// The one score record (common/score.hpp) and its serializer: a round trip of every field, the
// keys it writes, what older records wrote (fixtures under tests/fixtures/records) still reading,
// the tolerance's one JSON form and text, and the report-to-score conversion.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "kagent/agent/run_record.hpp"
#include "kagent/agent/transcript.hpp"
#include "kagent/common/error.hpp"
#include "kagent/common/files.hpp"
#include "kagent/common/score.hpp"
#include "kagent/eval/evaluator.hpp"
#include "kagent/eval/report_score.hpp"
#include "kagent/report/results.hpp"
#include "test_util.hpp"

using namespace kagent;
using json = nlohmann::json;

namespace {

std::filesystem::path fixture(const char* name) {
  return test::source_dir() / "tests/fixtures/records" / name;
}

Score full_score() {
  Score s;
  s.tier = 3;
  s.candidate_ms = 0.5;
  s.eager_ms = 1.0;
  s.compile_ms = 0.6;
  s.speedup_vs_eager = 2.0;
  s.speedup_vs_compile = 1.2;
  s.precision = "tf32";
  s.tolerance = Tolerance{1e-3, 2e-3};
  s.device = "NVIDIA H100 80GB HBM3";
  s.stop_rule = ">= 20 samples";
  s.flags = {"weak reference: output 'out' ...", "suspicious: median below the memory floor"};
  return s;
}

}  // namespace

TEST(Score, RoundTripsEveryField) {
  const Score s = full_score();
  const json j = s;
  EXPECT_EQ(j.get<Score>(), s);
  EXPECT_EQ(j.at("tolerance"), json({{"atol", 1e-3}, {"rtol", 2e-3}}));
  EXPECT_EQ(j.at("flags").size(), 2u);
  // The default score: times and speedups are null, what was not recorded is absent.
  const json empty = Score{};
  EXPECT_EQ(empty, json({{"tier", -1},
                         {"candidate_ms", nullptr},
                         {"eager_ms", nullptr},
                         {"compile_ms", nullptr},
                         {"speedup_vs_eager", nullptr},
                         {"speedup_vs_compile", nullptr}}));
  EXPECT_EQ(empty.get<Score>(), Score{});
}

TEST(Score, ReadsOlderNamesAndRefusesWrongTypesNamingTheKey) {
  // "median_ms": the candidate's time in run records before the score was one type.
  EXPECT_EQ(json({{"tier", 2}, {"median_ms", 1.5}}).get<Score>().candidate_ms, 1.5);
  EXPECT_EQ(json({{"candidate_ms", 1.0}, {"median_ms", 1.5}}).get<Score>().candidate_ms, 1.0);
  // A typed flag (protocol/flags.hpp) keeps its text; a time that is not a number is not recorded.
  EXPECT_EQ(json({{"flags", {{{"kind", "note"}, {"text", "a note"}}}}}).get<Score>().flags,
            std::vector<std::string>{"a note"});
  EXPECT_FALSE(json({{"eager_ms", "fast"}}).get<Score>().eager_ms.has_value());
  // A tolerance without both numbers is not recorded.
  EXPECT_FALSE(json({{"tolerance", {{"atol", 1e-4}}}}).get<Score>().tolerance.has_value());
  for (const auto& [bad, key] : std::vector<std::pair<json, std::string>>{{{{"tier", 7}}, "tier"},
                                                                          {{{"tier", 1e300}}, "tier"},
                                                                          {{{"tier", "2"}}, "tier"},
                                                                          {{{"device", 3}}, "device"},
                                                                          {{{"flags", "x"}}, "flags"}}) {
    try {
      (void)bad.get<Score>();
      ADD_FAILURE() << bad.dump() << " was read";
    } catch (const InputError& e) {
      EXPECT_EQ(std::string(e.what()).rfind(key + ":", 0), 0u) << e.what();
    }
  }
}

TEST(Score, BetterThanOrdersByTierThenSpeedup) {
  Score a, b;
  a.tier = 2;
  b.tier = 1;
  EXPECT_TRUE(better_than(a, b));
  b.tier = 2;
  a.speedup_vs_eager = 1.5;
  b.speedup_vs_eager = 1.2;
  EXPECT_TRUE(better_than(a, b));
  a.speedup_vs_compile = 0.9;
  b.speedup_vs_compile = 1.1;
  EXPECT_FALSE(better_than(a, b)) << "against compile when both have it";
  EXPECT_FALSE(better_than(a, a)) << "a tie keeps the earlier one";
}

TEST(Tolerance, OneJsonFormAndOneText) {
  const Tolerance t{1e-2, 1e-3};
  EXPECT_EQ(json(t), json({{"atol", 1e-2}, {"rtol", 1e-3}}));
  EXPECT_EQ(json(t).get<Tolerance>(), t);
  EXPECT_THROW((void)json({{"atol", 1e-2}}).get<Tolerance>(), json::exception) << "the strict reader needs both";
  EXPECT_EQ(recorded_tolerance(json(t)), t);
  EXPECT_FALSE(recorded_tolerance(json({{"atol", nullptr}, {"rtol", 1e-3}})).has_value());
  EXPECT_EQ(tolerance_text(t), "atol 0.01, rtol 0.001");
}

TEST(Score, AnEvaluationReportBecomesAScore) {
  EvalReport rep;
  rep.precision = Precision::fp32;
  rep.tolerance = Tolerance{1e-4, 1e-4};
  rep.compile.ok = true;
  rep.ran = true;
  rep.outcome.correct = true;
  rep.outcome.device.name = "GPU";
  rep.outcome.candidate_time = TimingSummary{};
  rep.outcome.candidate_time->median_ms = 0.5;
  rep.outcome.flags.push_back(Flag{FlagKind::note, "", 0, 0, "a note"});
  rep.baselines.eager_ms = 1.0;
  rep.baselines.compile_ms = 0.6;
  rep.reward = compute_reward(true, true, 0.5, rep.baselines);
  const Score s = report_score(rep);
  EXPECT_EQ(s.tier, 3);
  EXPECT_EQ(s.candidate_ms, 0.5);
  EXPECT_EQ(s.eager_ms, 1.0);
  EXPECT_EQ(s.compile_ms, 0.6);
  EXPECT_DOUBLE_EQ(*s.speedup_vs_eager, 2.0);
  EXPECT_DOUBLE_EQ(*s.speedup_vs_compile, 1.2);
  EXPECT_EQ(s.precision, "fp32");
  EXPECT_EQ(s.tolerance, rep.tolerance);
  EXPECT_EQ(s.device, "GPU");
  EXPECT_EQ(s.stop_rule, stop_rule_text(rep.outcome.stop_rule));
  EXPECT_EQ(s.flags, std::vector<std::string>{"a note"});
  rep.outcome.candidate_time.reset();
  EXPECT_TRUE(report_score(rep).stop_rule.empty()) << "not timed: no stopping rule";
}

// A candidate that failed before the runner reached the GPU (a ModelNew solution that does not
// load) has no device facts: its report has no line of zeros for them.
TEST(Score, AReportWithoutDeviceFactsHasNoDeviceLine) {
  EvalReport rep;
  rep.precision = Precision::fp32;
  rep.compile.ok = true;
  rep.outcome.correct = false;
  rep.outcome.message = "the solution does not load";
  EXPECT_EQ(render_report(rep).find("device:"), std::string::npos) << render_report(rep);
  rep.outcome.device.name = "NVIDIA H200";
  rep.outcome.device.sms = 132;
  EXPECT_NE(render_report(rep).find("device: NVIDIA H200 (132 SMs"), std::string::npos) << render_report(rep);
}

// Where a timing pass's sampling went (the GPU span, the GPU time between samples, the host's wait)
// is in the record and on the report's timing-pass line; a pass without the figures says nothing of them.
TEST(Score, TheTimingPassLineCarriesTheSamplingSpan) {
  EvalReport rep;
  rep.precision = Precision::fp32;
  rep.compile.ok = true;
  rep.outcome.correct = true;
  rep.outcome.device.name = "NVIDIA H200";
  rep.outcome.device.sms = 132;
  TimingSummary t;
  t.n = 1000;
  t.median_ms = 0.05;
  t.gpu_time_s = 0.0498;
  t.busy_s = 0.1087;
  t.wall_s = 0.1813;
  rep.outcome.candidate_time = t;
  EXPECT_EQ(render_report(rep).find("sampling spans"), std::string::npos) << render_report(rep);
  t.span_s = 0.179;
  t.gap_s = 0.0036;
  t.host_wait_s = 0.1361;
  rep.outcome.candidate_time = t;
  EXPECT_NE(render_report(rep).find("; sampling spans 179.0 ms of GPU time (3.6 ms between samples), the host waited "
                                    "136.1 ms"),
            std::string::npos)
      << render_report(rep);
  const TimingSummary back = json(t).get<TimingSummary>();
  EXPECT_DOUBLE_EQ(back.span_s, 0.179);
  EXPECT_DOUBLE_EQ(back.gap_s, 0.0036);
  EXPECT_DOUBLE_EQ(back.host_wait_s, 0.1361);
}

// results.jsonl as earlier versions wrote it: version 1 (no record_version, device or stop rule)
// and version 2 still read; a version-2 line is written back exactly as it was.
TEST(Score, OlderResultsFilesRead) {
  const auto v1 = report::read_results({fixture("results_v1.jsonl")});
  ASSERT_EQ(v1.size(), 2u);
  EXPECT_EQ(v1[0].score.tier, 3);
  EXPECT_EQ(v1[0].score.speedup_vs_eager, 2.0);
  EXPECT_EQ(v1[0].score.tolerance, Tolerance{});
  EXPECT_TRUE(v1[0].score.device.empty());
  EXPECT_EQ(v1[0].kagent_version, "");
  EXPECT_EQ(v1[1].status, "unsolved");
  EXPECT_EQ(v1[1].score, Score{});

  const auto v2 = report::read_results({fixture("results_v2.jsonl")});
  ASSERT_EQ(v2.size(), 2u);
  EXPECT_EQ(v2[0].score.device, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(v2[0].best_by_turn, (BestByTurn{{2, 0.8}, {3, 1.6}}));
  const std::string text = read_text_file(fixture("results_v2.jsonl"));
  EXPECT_EQ(json(v2[0]), json::parse(text.substr(0, text.find('\n'))));

  test::TempDir t;
  json newer = v2[0];
  newer["record_version"] = report::kRecordVersion + 1;
  t.write("results.jsonl", newer.dump() + "\n");
  try {
    (void)report::read_results({t / "results.jsonl"});
    ADD_FAILURE() << "a newer record was read";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find(fmt::format("record_version {}", report::kRecordVersion + 1)),
              std::string::npos)
        << e.what();
  }
}

// A transcript whose evaluation events carry the score as version 1 wrote it: resuming restores
// the count, the best candidate and the best speedup by turn from it.
TEST(Score, AnOlderTranscriptRestoresTheRunRecord) {
  test::TempDir t;
  const auto events = agent::Transcript::read(fixture("transcript_v1.jsonl"));
  agent::Transcript transcript(t / "transcript.jsonl");
  agent::RunRecord record(t.path(), transcript);
  record.restore(events);
  EXPECT_EQ(record.evaluations(), 4);
  ASSERT_TRUE(record.best().has_value());
  EXPECT_EQ(record.best()->number, 3);
  EXPECT_EQ(record.best()->score.candidate_ms, 1.25);
  EXPECT_EQ(record.best_by_turn(), (BestByTurn{{2, 0.8}, {3, 1.6}}));
}

// The run record keeps the best speedup by turn as the agent loop says which turn it is in.
TEST(Score, TheRunRecordKeepsTheBestSpeedupByTurn) {
  test::TempDir t;
  agent::Transcript transcript(t / "transcript.jsonl");
  agent::RunRecord record(t.path(), transcript);
  auto evaluate = [&](int turn, int tier, double eager_ms) {
    EvalReport rep;
    rep.reward.tier = tier;
    if (tier > 0) rep.reward.speedup_vs_eager = eager_ms;
    record.set_turn(turn);
    return record.evaluated("k.cu", "//", rep);
  };
  evaluate(1, -1, 0);
  evaluate(2, 1, 0.8);
  evaluate(2, 2, 1.4);
  evaluate(3, 2, 1.2);
  evaluate(5, 3, 1.9);
  EXPECT_EQ(record.best_by_turn(), (BestByTurn{{2, 0.8}, {2, 1.4}, {5, 1.9}}));
  EXPECT_EQ(record.best()->number, 5);
  // The transcript's evaluation events carry the typed score.
  const auto lines = agent::Transcript::read(t / "transcript.jsonl");
  ASSERT_EQ(lines.size(), 5u);
  EXPECT_EQ(lines[4].at("score").at("tier"), 3);
  EXPECT_EQ(lines[4].at("score").at("speedup_vs_eager"), 1.9);
}
