// results.jsonl records and the CUDA Agent paper's summary statistics, against hand-computed
// values; merging shards and resumed runs.
#include <sys/stat.h>

#include <gtest/gtest.h>

#include <cmath>

#include "kagent/common/error.hpp"
#include "kagent/report/results.hpp"
#include "test_util.hpp"

using namespace kagent;
using namespace kagent::report;

namespace {

ResultRecord rec(const std::string& problem, const std::string& level, const std::string& status, int tier,
                 std::optional<double> vs_eager = std::nullopt, std::optional<double> vs_compile = std::nullopt) {
  ResultRecord r;
  r.problem = problem;
  r.level = level;
  r.status = status;
  r.score.tier = tier;
  r.score.speedup_vs_eager = vs_eager;
  r.score.speedup_vs_compile = vs_compile;
  return r;
}

std::string line(const ResultRecord& r) {
  return nlohmann::json(r).dump() + "\n";
}

}  // namespace

TEST(Results, RecordRoundTrips) {
  ResultRecord r = rec("level1/19_ReLU", "level1", "correct", 2, 1.25, 0.9);
  r.score.candidate_ms = 3.4;
  r.score.eager_ms = 4.25;
  r.run_dir = "runs/x";
  r.score.precision = "tf32";
  ResultRecord b = nlohmann::json(r).get<ResultRecord>();
  EXPECT_EQ(b.score.precision, "tf32");
  EXPECT_EQ(nlohmann::json(rec("a", "l", "correct", 1, 1.0, 1.0)).count("precision"), 0u)
      << "old records stay as they were";
  EXPECT_EQ(b.problem, r.problem);
  EXPECT_EQ(b.score.tier, 2);
  EXPECT_DOUBLE_EQ(*b.score.speedup_vs_eager, 1.25);
  EXPECT_DOUBLE_EQ(*b.score.candidate_ms, 3.4);
  EXPECT_FALSE(b.score.compile_ms.has_value());
  EXPECT_EQ(b.run_dir, "runs/x");
  EXPECT_FALSE(b.score.tolerance.has_value());
  EXPECT_FALSE(nlohmann::json(r).contains("tolerance")) << "a record without an evaluation names no tolerance";
  r.score.precision = "fp32";
  r.score.tolerance = Tolerance{1e-2, 1e-3};
  b = nlohmann::json(r).get<ResultRecord>();
  EXPECT_EQ(b.score.precision, "fp32");
  EXPECT_EQ(b.score.tolerance, (Tolerance{1e-2, 1e-3}));
  EXPECT_EQ(nlohmann::json(r)["tolerance"], nlohmann::json({{"atol", 1e-2}, {"rtol", 1e-3}}));
}

// A record says how it was measured (GPU, stopping rule, the kagent that wrote it) and its format's
// version; a record from a newer format is refused rather than misread.
TEST(Results, RecordsCarryHowTheyWereMeasuredAndTheirVersion) {
  ResultRecord r = rec("level1/19_ReLU", "level1", "correct", 2, 1.25, 0.9);
  r.score.device = "NVIDIA H100 80GB HBM3";
  r.score.stop_rule = ">= 20 samples";
  nlohmann::json j = r;
  EXPECT_EQ(j["record_version"], kRecordVersion);
  EXPECT_EQ(j["kagent_version"], KAGENT_VERSION) << "written by this kagent";
  ResultRecord b = j.get<ResultRecord>();
  EXPECT_EQ(b.score.device, r.score.device);
  EXPECT_EQ(b.score.stop_rule, r.score.stop_rule);
  EXPECT_EQ(b.kagent_version, KAGENT_VERSION);
  j["record_version"] = kRecordVersion + 1;
  j["kagent_version"] = "9.0.0";
  try {
    (void)j.get<ResultRecord>();
    FAIL() << "a newer record was read";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("newer than this kagent reads"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("kagent 9.0.0"), std::string::npos) << e.what();
  }
  // Records of version 1 (no record_version) still read.
  EXPECT_EQ(nlohmann::json::parse(R"({"problem": "a", "status": "error"})").get<ResultRecord>().kagent_version, "");
}

TEST(Results, MeasurementSettingsGroupTheMeasuredRecords) {
  auto measured = [](ResultRecord r, const std::string& device) {
    r.score.device = device;
    r.score.precision = "fp32";
    r.score.tolerance = Tolerance{1e-4, 1e-4};
    r.score.stop_rule = "rule";
    r.kagent_version = "0.1.0";
    return r;
  };
  std::vector<ResultRecord> rs = {measured(rec("level1/a", "level1", "correct", 2, 1.5), "H100"),
                                  measured(rec("level1/b", "level1", "incorrect", -1), "H100"),
                                  rec("level1/c", "level1", "error", -1),  // failed before any timing
                                  measured(rec("level1/d", "level1", "correct", 1, 0.9), "H200")};
  auto settings = measurement_settings(rs);
  ASSERT_EQ(settings.size(), 2u);
  EXPECT_EQ(settings[0].first.device, "H100");
  EXPECT_EQ(settings[0].second, 2);
  EXPECT_EQ(settings[1].second, 1);
  EXPECT_EQ(setting_text(settings[1].first), "H200, fp32 (atol 0.0001, rtol 0.0001), stop rule rule, kagent 0.1.0");
  EXPECT_EQ(setting_text(MeasurementSetting{}),
            "device not recorded, precision not recorded, stop rule not recorded, kagent version not recorded");
  rs.pop_back();
  EXPECT_EQ(measurement_settings(rs).size(), 1u);
}

// The summary says what the problems were judged under, and says MIXED when shards or resumed
// runs used different tolerances; problems never evaluated (unsolved) do not count.
TEST(Results, SummaryNamesTheTolerances) {
  auto judged = [](ResultRecord r, double tol) {
    r.score.precision = "fp32";
    r.score.tolerance = Tolerance{tol, tol};
    return r;
  };
  std::vector<ResultRecord> rs = {judged(rec("level1/a", "level1", "correct", 2, 1.5), 1e-4),
                                  judged(rec("level1/b", "level1", "incorrect", -1), 1e-4),
                                  rec("level1/c", "level1", "unsolved", -1)};
  auto s = summarize(rs);
  ASSERT_EQ(s.back().group, "overall");
  ASSERT_EQ(s.back().numerics.size(), 1u);
  EXPECT_EQ(s.back().numerics[0].problems, 2);
  std::string text = render_summary(s, false);
  EXPECT_NE(text.find("judged under fp32, atol 0.0001, rtol 0.0001 (2 problems)"), std::string::npos) << text;
  EXPECT_NE(render_summary(s, true).find("judged under fp32"), std::string::npos);
  EXPECT_EQ(nlohmann::json(s.back())["numerics"][0]["atol"], 1e-4);

  rs.push_back(judged(rec("level2/d", "level2", "correct", 1, 0.5), 1e-2));
  text = render_summary(summarize(rs), false);
  EXPECT_NE(text.find("judged under MIXED settings: fp32, atol 0.0001, rtol 0.0001 (2 problems); fp32, atol 0.01, "
                      "rtol 0.01 (1 problem)"),
            std::string::npos)
      << text;
}

// Level 1: four problems. Speedups vs eager 2.0 (tier 3), 1.2 (tier 2), 0.5 (tier 1), and one
// incorrect. pass 3/4, > eager 2/4, tier 3 1/4, geomean vs eager (2.0*1.2*0.5)^(1/3) = 1.2^(1/3),
// fast_1.0 = 2/4 (2.0 and 1.2), fast_1.5 = 1/4, fast_2.0 = 0 (strictly greater).
// Level 2: one unsolved problem: everything 0, no geomean.
TEST(Results, SummaryMatchesHandComputedValues) {
  std::vector<ResultRecord> rs = {
      rec("level1/a", "level1", "correct", 3, 2.0, 1.1), rec("level1/b", "level1", "correct", 2, 1.2, 0.8),
      rec("level1/c", "level1", "correct", 1, 0.5, 0.4), rec("level1/d", "level1", "incorrect", -1),
      rec("level2/e", "level2", "unsolved", -1)};
  auto s = summarize(rs);
  ASSERT_EQ(s.size(), 3u);
  const Summary& l1 = s[0];
  EXPECT_EQ(l1.group, "level1");
  EXPECT_EQ(l1.problems, 4);
  EXPECT_DOUBLE_EQ(l1.pass_rate, 0.75);
  EXPECT_DOUBLE_EQ(l1.faster_than_eager, 0.5);
  EXPECT_DOUBLE_EQ(l1.tier3, 0.25);
  EXPECT_NEAR(*l1.geomean_vs_eager, std::cbrt(1.2), 1e-12);
  EXPECT_NEAR(*l1.geomean_vs_compile, std::cbrt(1.1 * 0.8 * 0.4), 1e-12);
  EXPECT_DOUBLE_EQ(l1.fast_1, 0.5);
  EXPECT_DOUBLE_EQ(l1.fast_1_5, 0.25);
  EXPECT_DOUBLE_EQ(l1.fast_2, 0.0);
  const Summary& l2 = s[1];
  EXPECT_EQ(l2.problems, 1);
  EXPECT_DOUBLE_EQ(l2.pass_rate, 0.0);
  EXPECT_FALSE(l2.geomean_vs_eager.has_value());
  const Summary& all = s[2];
  EXPECT_EQ(all.group, "overall");
  EXPECT_EQ(all.problems, 5);
  EXPECT_DOUBLE_EQ(all.pass_rate, 0.6);
  EXPECT_DOUBLE_EQ(all.fast_1, 0.4);
  EXPECT_NEAR(*all.geomean_vs_eager, std::cbrt(1.2), 1e-12);
}

TEST(Results, ShardsMergeToOneRunAndTheLastRecordWins) {
  test::TempDir dir;
  auto a = dir.write(
      "a.jsonl", line(rec("level1/a", "level1", "correct", 2, 1.5)) + line(rec("level1/b", "level1", "timeout", -1)));
  // A resumed run re-evaluated b; a torn last line (killed mid-write) is skipped.
  auto b = dir.write("b.jsonl", line(rec("level1/c", "level1", "correct", 1, 0.9)) +
                                    line(rec("level1/b", "level1", "correct", 3, 2.5)) + "{\"problem\": \"level1/");
  auto merged = read_results({a, b});
  ASSERT_EQ(merged.size(), 3u);
  EXPECT_EQ(merged[1].problem, "level1/b");
  EXPECT_EQ(merged[1].status, "correct");
  EXPECT_EQ(merged[1].score.tier, 3);
  auto one = dir.write("one.jsonl", line(rec("level1/a", "level1", "correct", 2, 1.5)) +
                                        line(rec("level1/b", "level1", "correct", 3, 2.5)) +
                                        line(rec("level1/c", "level1", "correct", 1, 0.9)));
  EXPECT_EQ(render_summary(summarize(merged), false), render_summary(summarize(read_results({one})), false));
}

TEST(Results, MalformedLineNamesFileAndLine) {
  test::TempDir dir;
  auto f = dir.write("r.jsonl", line(rec("level1/a", "level1", "correct", 2, 1.5)) + "not json\n" +
                                    line(rec("level1/b", "level1", "correct", 2, 1.5)));
  try {
    read_results({f});
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("r.jsonl:2"), std::string::npos) << e.what();
  }
}

TEST(Results, MarkdownTable) {
  auto md = render_summary(summarize({rec("level1/a", "level1", "correct", 2, 1.5)}), true);
  EXPECT_EQ(md.rfind("| group | problems | pass |", 0), 0u) << md;
  EXPECT_NE(md.find("| level1 | 1 | 100.0% | 100.0% | 0.0% | 1.500x | - | 100.0% | 0.0% | 0.0% |"), std::string::npos)
      << md;
}

// Only an unterminated last line is a torn write; a complete one that does not parse is an error
// (it was dropped silently as if torn).
TEST(Results, ACompleteInvalidLastLineIsAnError) {
  test::TempDir dir;
  auto f = dir.write("r.jsonl", line(rec("level1/a", "level1", "correct", 2, 1.5)) + "{\"problem\": \"level1/\n");
  try {
    read_results({f});
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("r.jsonl:2: not valid JSON"), std::string::npos) << e.what();
  }
}

// Figures a hand-edited or hostile file may hold: refused naming the line, never UB on conversion.
TEST(Results, OutOfRangeNumbersAreRefusedNamingTheLine) {
  test::TempDir dir;
  auto error_of = [&](const std::string& record) {
    try {
      read_results({dir.write("r.jsonl", record + "\n")});
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("(no error)");
  };
  const std::string head = R"({"problem": "p", "status": "correct", )";
  EXPECT_NE(error_of(head + R"("tier": 1e300})").find("r.jsonl:1: not a result record (tier:"), std::string::npos);
  EXPECT_NE(error_of(head + R"("gpu": -1e300})").find("gpu:"), std::string::npos);
  EXPECT_NE(error_of(head + R"("best_by_turn": [[1e300, 2.0]]})").find("best_by_turn"), std::string::npos);
  EXPECT_NE(error_of(head + R"("tier": 1e400})").find("key tier: number out of range"), std::string::npos);
  auto records =
      read_results({dir.write("ok.jsonl", head + R"("tier": 3, "best_by_turn": [[2147483647, 2.0]]})" + "\n")});
  ASSERT_EQ(records.size(), 1u);
  EXPECT_EQ(records[0].best_by_turn[0].first, 2147483647);
}

TEST(Results, AFifoIsRefusedNotReadForever) {
  test::TempDir dir;
  auto fifo = dir / "results.jsonl";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  EXPECT_THROW(read_results({fifo}), InputError);
  EXPECT_THROW(read_results({"/dev/zero"}), InputError);
}

// results.jsonl files are merged from shards and downloaded: each line is bounded before its DOM
// is built (size and values), and a record kagent writes always fits (its error is cut).
TEST(Results, LinesAreBoundedAndWrittenRecordsFitThem) {
  test::TempDir dir;
  ResultRecord big = rec("level1/a", "level1", "compile_error", -1);
  big.error = std::string(size_t{3} << 20, 'e');
  auto f = dir.path() / "r.jsonl";
  {
    ResultsWriter w(f);
    w.append(big);
  }
  auto back = read_results({f});
  ASSERT_EQ(back.size(), 1u);
  EXPECT_LT(back[0].error.size(), kMaxResultLineBytes);
  EXPECT_EQ(back[0].error.rfind(std::string(1000, 'e'), 0), 0u) << "the error keeps its beginning";

  // Written by someone else: a line over 1 MiB, and one of 10^5 values in a few hundred KB.
  auto g = dir.write("g.jsonl", line(rec("level1/a", "level1", "correct", 2, 1.5)) + nlohmann::json(big).dump() + "\n");
  try {
    read_results({g});
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("g.jsonl:2: a line of"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("at most 1048576 bytes"), std::string::npos) << e.what();
  }
  std::string items;
  for (int i = 0; i < 100'000; ++i) items += "[],";
  auto h = dir.write("h.jsonl", R"({"problem": "p", "status": "correct", "pad": [)" + items + "[]]}\n");
  try {
    read_results({h});
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("h.jsonl:1"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("more than 65536 values"), std::string::npos) << e.what();
  }
}
