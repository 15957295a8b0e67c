// The judge's reading of `kagent eval --json` records (verdict_of, verdict_line) and several
// candidates in turn on one backend (evaluate_each).
#include <gtest/gtest.h>

#include "fake_backend.hpp"
#include "kagent/common/error.hpp"
#include "kagent/judge/each.hpp"
#include "kagent/judge/verdict.hpp"

using namespace kagent;

namespace {

judge::CandidateRequest text(const std::string& name, const std::string& source) {
  return test::text_request(name, source);
}

nlohmann::json record_of(const std::string& source) {
  test::FakeBackendState s;
  test::FakeBackend b(&s);
  return b.evaluate(text("c.cu", source));
}

}  // namespace

TEST(Judge, VerdictOfRecords) {
  auto ok = judge::verdict_of(record_of("tier 3 speedup 2.5"));
  EXPECT_EQ(ok.status, "correct");
  EXPECT_EQ(ok.score.tier, 3);
  EXPECT_DOUBLE_EQ(*ok.score.speedup_vs_eager, 2.5);
  EXPECT_DOUBLE_EQ(*ok.score.candidate_ms, 0.4);
  EXPECT_DOUBLE_EQ(*ok.score.eager_ms, 1.0);
  EXPECT_EQ(ok.score.device, "Fake GPU");
  EXPECT_EQ(ok.score.precision, "fp32");
  EXPECT_EQ(judge::verdict_of(record_of("compile_error")).status, "compile_error");
  EXPECT_EQ(judge::verdict_of(record_of("crash")).status, "crash");
  auto wrong = judge::verdict_of(record_of("tier -1"));
  EXPECT_EQ(wrong.status, "incorrect");
  EXPECT_EQ(wrong.message, "correctness: output y differs");
  // The no-GPU compile failure `kagent eval` prints has only these keys.
  auto bare = judge::verdict_of({{"candidate", "x.cu"}, {"tier", -1}, {"compile", {{"ok", false}, {"log", "e"}}}});
  EXPECT_EQ(bare.status, "compile_error");
  EXPECT_THROW(judge::verdict_of({{"candidate", "x"}}), InputError);
  EXPECT_THROW(judge::verdict_of(nlohmann::json::array()), InputError);
  // A malformed score is refused, naming the key.
  nlohmann::json damaged = record_of("tier 2");
  damaged["score"]["tier"] = "two";
  EXPECT_THROW(judge::verdict_of(damaged), InputError);
}

TEST(Judge, VerdictLine) {
  const std::string ok = judge::verdict_line(record_of("tier 2 speedup 1.5"));
  EXPECT_NE(ok.find("c.cu: tier 2, correct"), std::string::npos) << ok;
  EXPECT_NE(ok.find("1.50x eager"), std::string::npos) << ok;
  const std::string bad = judge::verdict_line(record_of("compile_error"));
  EXPECT_EQ(bad, "c.cu: tier -1, compile_error: x.cu(1): error");
}

TEST(Judge, EachCandidateInTurnAndRefusalsDoNotStopTheRest) {
  test::FakeBackendState s;
  test::FakeBackend b(&s);
  std::vector<nlohmann::json> seen;
  auto out = judge::evaluate_each(
      b, {text("a.cu", "tier 2"), text("b.cu", "throw input"), text("c.cu", "compile_error"), text("d.py", "tier 1")},
      [&](const nlohmann::json& j) { seen.push_back(j); });
  EXPECT_EQ(out.correct, 2);
  EXPECT_EQ(out.failed, 1);
  EXPECT_EQ(out.refused, 1);
  ASSERT_EQ(seen.size(), 4u);
  EXPECT_EQ(seen[1]["candidate"], "b.cu");
  EXPECT_NE(seen[1]["error"].get<std::string>().find("unknown kernel"), std::string::npos);
  EXPECT_EQ(seen[3]["candidate"], "d.py");
  // Before each evaluation, the ones after it are announced to the backend, in order.
  EXPECT_EQ(s.events, (std::vector<std::string>{"expect b.cu c.cu d.py", "evaluate a.cu", "expect c.cu d.py",
                                                "evaluate b.cu", "expect d.py", "evaluate c.cu", "evaluate d.py"}));
  // The environment ends it.
  EXPECT_THROW(
      judge::evaluate_each(b, {text("e.cu", "throw env"), text("f.cu", "tier 1")}, [](const nlohmann::json&) {}),
      EnvError);
}
