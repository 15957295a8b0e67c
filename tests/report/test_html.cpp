// The HTML report as text: the summary table, one bar per correct problem, the turn chart only
// for agent runs, escaping of everything that comes from results, and inputs that must not
// produce NaN or infinite coordinates (no records, odd values).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "kagent/report/html.hpp"

using namespace kagent::report;

namespace {

ResultRecord rec(const std::string& problem, const std::string& status, int tier,
                 std::optional<double> vs_eager = std::nullopt, const std::string& error = "") {
  ResultRecord r;
  r.problem = problem;
  r.level = problem.substr(0, problem.find('/'));
  r.status = status;
  r.score.tier = tier;
  r.score.speedup_vs_eager = vs_eager;
  r.error = error;
  return r;
}

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + what.size())) ++n;
  return n;
}

std::string render(const std::vector<ResultRecord>& rs, const std::string& title = "t") {
  return render_html(rs, summarize(rs), title);
}

// No coordinate or number came out as nan or inf.
void expect_finite(const std::string& html) {
  EXPECT_EQ(html.find("nan"), std::string::npos);
  EXPECT_EQ(html.find("inf"), std::string::npos);
}

}  // namespace

TEST(Html, SummaryTableAndOneBarPerCorrectProblem) {
  std::vector<ResultRecord> rs = {rec("level1/a", "correct", 3, 2.0), rec("level1/b", "correct", 2, 1.2),
                                  rec("level1/c", "correct", 1, 0.5), rec("level1/d", "incorrect", -1),
                                  rec("level2/e", "unsolved", -1)};
  const std::string html = render(rs, "batch");
  EXPECT_EQ(html.rfind("<!DOCTYPE html>", 0), 0u);
  EXPECT_NE(html.find("<title>batch</title>"), std::string::npos);
  ASSERT_NE(html.find("<table id=\"summary\">"), std::string::npos);
  // The same numbers as render_summary: level1 passes 3 of 4, geomean vs eager 1.2^(1/3) = 1.063.
  EXPECT_NE(html.find("<tr><td>level1</td><td class=\"num\">4</td><td class=\"num\">75.0%</td>"), std::string::npos)
      << html;
  EXPECT_NE(html.find("1.063x"), std::string::npos);
  EXPECT_NE(html.find("<tr class=\"overall\"><td>overall</td><td class=\"num\">5</td>"), std::string::npos);
  EXPECT_EQ(count(html, "class=\"bar\""), 3u);
  // The rest are named with their status in the chart; unsolved ones are one row with their count.
  EXPECT_NE(html.find(">incorrect</text>"), std::string::npos);
  EXPECT_NE(html.find(">1 unsolved</text>"), std::string::npos);
  EXPECT_NE(html.find("<svg id=\"speedups\""), std::string::npos);
  EXPECT_NE(html.find("<svg id=\"tiers\""), std::string::npos);
  EXPECT_NE(html.find("<table id=\"problems\">"), std::string::npos);
  EXPECT_EQ(count(html, "<tr><td>level"), 2u);                 // the summary's level rows
  EXPECT_EQ(count(html, "<tr><td class=\"name\">level"), 5u);  // the problems
  EXPECT_EQ(html.find("<svg id=\"turns\""), std::string::npos) << "no agent runs, so no turn chart";
  // Self-contained: nothing fetched, nothing run.
  EXPECT_EQ(html.find("<script"), std::string::npos);
  EXPECT_EQ(html.find("http://"), std::string::npos);
  EXPECT_EQ(html.find("https://"), std::string::npos);
  expect_finite(html);
}

TEST(Html, EscapesEverythingFromResults) {
  std::vector<ResultRecord> rs = {
      rec("level1/a<b&\"c'", "correct", 2, 1.5),
      rec("level1/x", "compile_error", -1, std::nullopt, "<script>alert(1)</script> ]]> & \x01\x1b[0m \xff"),
      rec("level1/y", "weird<status>", -1)};
  rs[0].best_by_turn = {{1, 1.1}, {2, 1.5}};
  const std::string html = render(rs, "<title> & \"quotes\"");
  EXPECT_EQ(html.find("a<b"), std::string::npos);
  EXPECT_GE(count(html, "a&lt;b&amp;&quot;c&#39;"), 4u);  // chart label, bar tooltip, turn legend, table
  EXPECT_EQ(html.find("<script"), std::string::npos);
  EXPECT_NE(html.find("&lt;script&gt;alert(1)&lt;/script&gt; ]]&gt; &amp; "), std::string::npos);
  EXPECT_NE(html.find("<title>&lt;title&gt; &amp; &quot;quotes&quot;</title>"), std::string::npos);
  EXPECT_EQ(html.find("weird<status>"), std::string::npos);
  EXPECT_NE(html.find("class=\"st st-other\">weird&lt;status&gt;"), std::string::npos);
  for (char c : html) {
    const auto u = static_cast<unsigned char>(c);
    EXPECT_TRUE(u >= 0x20 || c == '\n') << "control character " << int(u);
    EXPECT_NE(u, 0xFFu);
  }
}

TEST(Html, EmptyInputRenders) {
  const std::string html = render({});
  EXPECT_NE(html.find("<table id=\"summary\">"), std::string::npos);
  EXPECT_NE(html.find("<tr class=\"overall\"><td>overall</td><td class=\"num\">0</td>"), std::string::npos);
  EXPECT_NE(html.find("No results."), std::string::npos);
  EXPECT_EQ(count(html, "class=\"bar\""), 0u);
  EXPECT_NE(html.find("</html>"), std::string::npos);
  expect_finite(html);
}

TEST(Html, OddValuesStayFinite) {
  const double nan = std::numeric_limits<double>::quiet_NaN(), inf = std::numeric_limits<double>::infinity();
  // Names without "nan" or "inf" in them, which expect_finite looks for.
  std::vector<ResultRecord> rs = {rec("level1/p1", "correct", 1, nan),   rec("level1/p2", "correct", 3, inf),
                                  rec("level1/p3", "correct", 1, 0.0),   rec("level1/p4", "correct", 3, 1e12),
                                  rec("level1/p5", "correct", 1, 1e-12), rec("level1/p6", "correct", 1, 1.0)};
  rs[0].score.candidate_ms = nan;
  rs[0].best_by_turn = {{0, nan}, {1, 0.0}, {2, inf}};  // nothing drawable: no line
  rs[5].best_by_turn = {{3, 1.0}};                      // a single turn
  const std::string html = render(rs);
  EXPECT_EQ(count(html, "class=\"bar\""), 3u);  // 1e12 and 1e-12 (clamped to the chart), 1.0
  EXPECT_EQ(count(html, "correct, no timing"), 3u);
  EXPECT_EQ(count(html, "class=\"step\""), 1u);
  expect_finite(html);
}

TEST(Html, TurnChartHasOneLinePerAgentRun) {
  std::vector<ResultRecord> rs = {rec("level1/a", "correct", 3, 2.0), rec("level1/b", "correct", 2, 1.2),
                                  rec("level1/c", "unsolved", -1)};
  rs[0].best_by_turn = {{1, 0.8}, {3, 1.4}, {7, 2.0}};
  rs[1].best_by_turn = {{2, 1.2}};
  const std::string html = render(rs);
  ASSERT_NE(html.find("<svg id=\"turns\""), std::string::npos);
  EXPECT_EQ(count(html, "class=\"step\""), 2u);
  // Steps: along at the old best to the next turn, then up to the new one.
  const size_t path = html.find("class=\"step\" d=\"M");
  ASSERT_NE(path, std::string::npos);
  const std::string d = html.substr(path, html.find('"', path + 16) - path);
  EXPECT_EQ(count(d, "H"), 2u) << d;
  EXPECT_EQ(count(d, "V"), 2u) << d;
  expect_finite(html);
}

// A best_by_turn turn of 2^31-1 (and one of -2^31 from a record built in code) overflowed the
// turn axis' int arithmetic (UBSan aborted).
TEST(Html, ExtremeTurnsRender) {
  auto r = rec("level1/a", "correct", 2, 1.5);
  r.best_by_turn = {{std::numeric_limits<int>::min(), 1.1}, {0, 1.2}, {std::numeric_limits<int>::max(), 1.5}};
  auto html = render({r});
  EXPECT_NE(html.find(">-2147483648<"), std::string::npos);  // the first turn label
  expect_finite(html);
}
