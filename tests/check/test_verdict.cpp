// The gate's decisions from evaluation reports (no GPU): compile errors with their lines,
// incorrect kernels, speedup thresholds, the regression interval against the margin; and the CI
// outputs: JUnit XML (checked with xmllint), GitHub annotations with their escapes, Markdown.
#include <gtest/gtest.h>

#include "kagent/check/verdict.hpp"
#include "kagent/sandbox/process.hpp"
#include "test_util.hpp"

using namespace kagent;
using namespace kagent::check;
using namespace std::chrono_literals;

namespace {

CheckEntry entry(const std::string& name = "softmax") {
  CheckEntry e;
  e.name = name;
  e.op = "ops/softmax/op.json";
  e.kernel = "kernels/softmax.cu";
  return e;
}

// A correct, timed candidate: 1 ms against eager 2 ms and compile 1.2 ms.
EvalReport correct_report() {
  EvalReport r;
  r.compile.ok = true;
  r.ran = true;
  r.outcome.correct = true;
  r.outcome.candidate_time = TimingSummary{};
  r.outcome.candidate_time->median_ms = 1.0;
  r.baselines = {2.0, 1.2};
  r.reward = compute_reward(true, true, 1.0, r.baselines);
  return r;
}

AbComparison ab(double median, double low, double high) {
  AbComparison a;
  a.ratio = {100, median, low, high};
  a.baseline_correct = true;
  a.stop_reason = "converged";
  return a;
}

bool has(const std::string& s, const std::string& what) {
  return s.find(what) != std::string::npos;
}

}  // namespace

TEST(CheckVerdict, CompileErrorsCarryTheKernelsLines) {
  EvalReport r;
  r.compile.ok = false;
  r.compile.log =
      "kernels/softmax.cu(17): error: identifier \"scale\" is undefined\n      out[i] = scale;\n"
      "kernels/softmax.cu(21): warning #177-D: variable \"t\" was declared but never referenced\n"
      "2 errors detected in the compilation of \"kernels/softmax.cu\".\n";
  Verdict v = judge(entry(), r);
  EXPECT_EQ(v.status, "fail");
  ASSERT_EQ(v.diagnostics.size(), 2u);
  EXPECT_EQ(v.diagnostics[0].line, 17);
  EXPECT_EQ(v.diagnostics[0].severity, "error");
  EXPECT_EQ(v.diagnostics[0].message, "identifier \"scale\" is undefined");
  EXPECT_EQ(v.diagnostics[1].severity, "warning");
  EXPECT_EQ(v.diagnostics[1].line, 21);
  EXPECT_TRUE(has(v.reasons[0], "does not compile (1 error(s))"));
  // A plan error ("file:line:col: message") is located too.
  auto d = parse_diagnostics("kernels/softmax.cu:3:12: launch[0].grid: unknown tensor 'y'\n");
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].line, 3);
}

TEST(CheckVerdict, IncorrectFailsWithTheMismatch) {
  EvalReport r = correct_report();
  r.outcome.correct = false;
  r.outcome.failure_stage = FailureStage::correctness;
  r.outcome.mismatch = MismatchReport{};
  r.outcome.mismatch->tensor = "out";
  r.outcome.mismatch->count = 12;
  r.outcome.mismatch->numel = 4096;
  Verdict v = judge(entry(), r);
  EXPECT_EQ(v.status, "fail");
  EXPECT_TRUE(has(v.reasons[0], "incorrect (correctness): out differs in 12 of 4096")) << v.reasons[0];
}

TEST(CheckVerdict, MinSpeedupAgainstCompileOrEager) {
  CheckEntry e = entry();
  e.t.min_speedup = 1.1;  // vs compile: 1.2 / 1.0 = 1.2x
  EXPECT_EQ(judge(e, correct_report()).status, "pass");
  e.t.min_speedup = 1.25;
  Verdict v = judge(e, correct_report());
  EXPECT_EQ(v.status, "fail");
  EXPECT_TRUE(has(v.reasons[0], "1.200x vs compile, below the required 1.250x")) << v.reasons[0];
  e.t.vs = "eager";  // 2.0x vs eager
  EXPECT_EQ(judge(e, correct_report()).status, "pass");
  // No compile baseline (a native op without compile_baseline_ms): say so, fail.
  EvalReport r = correct_report();
  r.baselines.compile_ms.reset();
  r.reward = compute_reward(true, true, 1.0, r.baselines);
  e.t.vs.reset();
  v = judge(e, r);
  EXPECT_EQ(v.status, "fail");
  EXPECT_TRUE(has(v.reasons[0], "no torch.compile baseline")) << v.reasons[0];
  // Without a threshold, a correct kernel passes whatever its speed.
  EXPECT_EQ(judge(entry(), r).status, "pass");
}

// A timing CUPTI says does not cover the work fails the entry, naming the flag, threshold or not;
// a weak or degenerate reference (and the other advisory flags) are warnings on a pass.
TEST(CheckVerdict, UntrustedTimingFailsAndReferenceFlagsWarn) {
  EvalReport r = correct_report();
  r.outcome.flags = {
      {FlagKind::weak_reference, "out", 0, 0, "is 97.0% exact zeros"},
      {FlagKind::timing_untrusted, "", 8, 10, "2 kernel(s) ran outside the runner's stream and context"}};
  r.reward = compute_reward(true, true, 1.0, r.baselines, r.outcome.flags);
  CheckEntry e = entry();
  e.t.min_speedup = 1.1;
  for (const CheckEntry& which : {entry(), e}) {
    Verdict v = judge(which, r);
    EXPECT_EQ(v.status, "fail");
    ASSERT_EQ(v.reasons.size(), 1u);
    EXPECT_EQ(v.reasons[0],
              "its timing is not trusted: cupti: 2 kernel(s) ran outside the runner's stream and context");
    EXPECT_EQ(v.warnings, std::vector<std::string>{"weak reference: output 'out' is 97.0% exact zeros"});
  }

  EvalReport weak = correct_report();
  weak.outcome.flags = {{FlagKind::degenerate_reference, "out", 0, 1e-6, "is all (near) zero (max |ref| = 0)"}};
  Verdict v = judge(entry(), weak);
  EXPECT_EQ(v.status, "pass");
  EXPECT_TRUE(v.reasons.empty());
  ASSERT_EQ(v.warnings.size(), 1u);
  EXPECT_TRUE(has(render_table({v}), "warning softmax: degenerate reference: output 'out' is all (near) zero"))
      << render_table({v});
  EXPECT_EQ(verdict_json(v)["warnings"][0], v.warnings[0]);
  EXPECT_FALSE(verdict_json(judge(entry(), correct_report())).contains("warnings"));
  EXPECT_EQ(render_github({v}, "", std::filesystem::current_path()),
            "::warning file=kernels/softmax.cu,title=kagent check%3A softmax::degenerate reference: output 'out' is "
            "all (near) zero (max |ref| = 0)\n");
}

TEST(CheckVerdict, RegressionFailsOnlyWhenTheWholeIntervalIsPastTheMargin) {
  CheckEntry e = entry();
  e.t.baseline = "kernels/softmax_v1.cu";
  e.t.max_regression = 3;
  EvalReport r = correct_report();
  r.outcome.ab = ab(1.10, 1.095, 1.105);  // 10% slower, surely
  Verdict v = judge(e, r);
  EXPECT_EQ(v.status, "fail");
  EXPECT_TRUE(has(v.reasons[0], "regression: +10.00% (slower: 95% CI +9.50% to +10.50%")) << v.reasons[0];
  r.outcome.ab = ab(1.035, 1.025, 1.045);  // maybe past 3%, maybe not: not a failure
  EXPECT_EQ(judge(e, r).status, "pass");
  r.outcome.ab = ab(1.001, 0.995, 1.006);
  v = judge(e, r);
  EXPECT_EQ(v.status, "pass");
  EXPECT_TRUE(has(v.reasons[0], "vs baseline: +0.10%")) << v.reasons[0];
  e.t.max_regression.reset();  // default margin 5%
  r.outcome.ab = ab(1.06, 1.055, 1.065);
  EXPECT_EQ(judge(e, r).status, "fail");
  // A baseline that is itself wrong is not compared with; one that does not compile fails.
  r.outcome.ab->baseline_correct = false;
  r.outcome.ab->baseline_message = "out differs from the reference (3 of 4096 elements)";
  v = judge(e, r);
  EXPECT_EQ(v.status, "pass");
  EXPECT_TRUE(has(v.reasons[0], "not compared")) << v.reasons[0];
  r.outcome.ab.reset();
  r.baseline_error = "softmax_v1.cu(3): error: expected a \";\"";
  EXPECT_EQ(judge(e, r).status, "fail");
}

TEST(CheckVerdict, JunitIsValidAndCountsFailures) {
  CheckEntry odd = entry("a<b&\"c'");
  Verdict pass = judge(entry("ok"), correct_report());
  pass.wall_s = 1.5;
  EvalReport bad = correct_report();
  bad.outcome.correct = false;
  bad.outcome.message = "launch 0 faulted: ]]> \x01 <oops>";
  bad.outcome.failure_stage = FailureStage::launch;
  Verdict fail = judge(odd, bad);
  Verdict skip = unchecked(entry("gpu"), "no GPU");
  const std::string xml = render_junit({pass, fail, skip});
  EXPECT_TRUE(has(xml, R"(tests="3" failures="1" errors="0" skipped="1" time="1.500")")) << xml;
  EXPECT_FALSE(has(xml, "]]>"));
  EXPECT_TRUE(has(xml, "name=\"a&lt;b&amp;&quot;c&#39;\"")) << xml;
  if (find_in_path("xmllint").empty()) GTEST_SKIP() << "xmllint not found (Debian package libxml2-utils)";
  test::TempDir t;
  auto path = t.write("check.xml", xml);
  ProcessResult r = run_capture({"xmllint", "--noout", path.string()}, 30s);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  r = run_capture({"xmllint", "--xpath", "count(//testcase/failure)", path.string()}, 30s);
  EXPECT_EQ(r.output.substr(0, r.output.find('\n')), "1");
}

TEST(CheckVerdict, GithubAnnotationsAreEscapedAndPlaced) {
  EXPECT_EQ(github_escape_data("50% done\r\nnext"), "50%25 done%0D%0Anext");
  EXPECT_EQ(github_escape_property("a:b,c%\n"), "a%3Ab%2Cc%25%0A");
  test::TempDir t;
  CheckEntry e = entry("soft,max: v2");
  e.kernel = t / "kernels/softmax.cu";
  e.manifest_line = 7;
  EvalReport r;
  r.compile.log = (t / "kernels/softmax.cu").string() + "(17): error: 100% wrong: \"x\"\n";
  Verdict v = judge(e, r);
  std::string out = render_github({v}, t / "kagent.json", t.path());
  EXPECT_EQ(out,
            "::error file=kernels/softmax.cu,line=17,title=kagent check%3A soft%2Cmax%3A v2::100%25 wrong: \"x\"\n");
  // Other failures go on the manifest entry, multi-line messages escaped.
  EvalReport slow = correct_report();
  e.t.min_speedup = 5;
  e.t.vs = "eager";
  Verdict w = judge(e, slow);
  out = render_github({w, judge(entry("fine"), correct_report())}, t / "kagent.json", t.path());
  EXPECT_EQ(out,
            "::error file=kagent.json,line=7,title=kagent check%3A soft%2Cmax%3A v2::2.000x vs eager, below the "
            "required 5.000x (1.0000 ms vs 2.0000 ms)\n");
  // Without a manifest: on the kernel file.
  w.entry.manifest_line = 0;
  EXPECT_TRUE(has(render_github({w}, "", t.path()), "::error file=kernels/softmax.cu,title=")) << out;
}

TEST(CheckVerdict, MarkdownSummaryEscapesCells) {
  Verdict v = unchecked(entry("a|b"), "no GPU\nat all");
  const std::string md = render_markdown({v, judge(entry("ok"), correct_report())});
  EXPECT_TRUE(has(md, "### kagent check: 1 of 2 passed")) << md;
  EXPECT_TRUE(has(md, "| a\\|b | **unchecked** |")) << md;
  EXPECT_TRUE(has(md, "no GPU at all")) << md;
}

// A verdict's JSON is the evaluation's score (common/score.hpp) beside the check's own keys; one
// whose op did not load still names a precision and tolerance, as null.
TEST(CheckVerdict, JsonCarriesTheScoreKeys) {
  EvalReport r = correct_report();
  r.tolerance = Tolerance{1e-3, 1e-3};
  r.outcome.device.name = "GPU";
  const nlohmann::json j = verdict_json(judge(entry(), r));
  EXPECT_EQ(j.at("tier"), 3);
  EXPECT_EQ(j.at("candidate_ms"), 1.0);
  EXPECT_EQ(j.at("eager_ms"), 2.0);
  EXPECT_EQ(j.at("precision"), "fp32");
  EXPECT_EQ(j.at("tolerance"), nlohmann::json({{"atol", 1e-3}, {"rtol", 1e-3}}));
  EXPECT_EQ(j.at("device"), "GPU");
  EXPECT_EQ(j.at("name"), "softmax");
  const nlohmann::json skipped = verdict_json(unchecked(entry(), "no GPU"));
  EXPECT_TRUE(skipped.at("precision").is_null());
  EXPECT_EQ(skipped.at("tolerance"), nlohmann::json({{"atol", nullptr}, {"rtol", nullptr}}));
  EXPECT_TRUE(skipped.at("speedup_vs_eager").is_null());
  EXPECT_EQ(skipped.at("tier"), -1);
}
