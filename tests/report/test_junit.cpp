// JUnit XML of a batch: the counts in the testsuite attributes against hand-computed values,
// escaping of names and error text (markup, "]]>", control characters, bytes that are not UTF-8),
// and well-formedness as xmllint reads it.
#include <gtest/gtest.h>

#include <chrono>

#include "kagent/report/junit.hpp"
#include "kagent/sandbox/process.hpp"
#include "test_util.hpp"

using namespace kagent;
using namespace kagent::report;

namespace {

ResultRecord rec(const std::string& problem, const std::string& status, int tier, double wall_s,
                 std::optional<double> vs_eager = std::nullopt, const std::string& error = "") {
  ResultRecord r;
  r.problem = problem;
  r.level = problem.substr(0, problem.find('/'));
  r.status = status;
  r.score.tier = tier;
  r.score.speedup_vs_eager = vs_eager;
  r.wall_s = wall_s;
  r.error = error;
  return r;
}

// Eight problems: 2 correct, 3 failures (incorrect, compile_error, timeout), 1 error, 2 unsolved.
// time = 1.5 + 2.25 + 3 + 4 + 10 + 0.25 + 0 + 0 = 21 seconds.
std::vector<ResultRecord> batch() {
  return {rec("level1/1_a", "correct", 3, 1.5, 2.5),
          rec("level1/a<b&\"c'", "correct", 2, 2.25, 1.2),
          rec("level1/3_c", "incorrect", -1, 3, std::nullopt, "max abs error 0.5 > atol ]]> <oops> & \x01\x1b[31m"),
          rec("level2/4_d", "compile_error", -1, 4, std::nullopt, "error: expected ';'\nsecond line"),
          rec("level2/5_e", "timeout", -1, 10, std::nullopt, "ran past 600 s"),
          rec("level2/6_f", "error", -1, 0.25, std::nullopt, "runner crashed \xff\xfe"),
          rec("level3/7_g", "unsolved", -1, 0),
          rec("level3/8_h", "unsolved", -1, 0)};
}

bool has_xmllint() {
  return !find_in_path("xmllint").empty();
}

// xmllint's answer to an XPath expression on file, trimmed.
std::string xpath(const std::filesystem::path& file, const std::string& expr) {
  auto r = run_capture({"xmllint", "--xpath", expr, file.string()}, std::chrono::seconds(30));
  EXPECT_EQ(r.exit_code, 0) << expr << ": " << r.output;
  while (!r.output.empty() && (r.output.back() == '\n' || r.output.back() == ' ')) r.output.pop_back();
  return r.output;
}

}  // namespace

TEST(Junit, CountsMatchHandComputedValues) {
  const std::string xml = render_junit(batch(), "kagent results.jsonl");
  const std::string counts = "tests=\"8\" failures=\"3\" errors=\"1\" skipped=\"2\" time=\"21.000\"";
  EXPECT_NE(xml.find("<testsuites name=\"kagent results.jsonl\" " + counts + ">"), std::string::npos) << xml;
  EXPECT_NE(xml.find("<testsuite name=\"kagent results.jsonl\" " + counts + ">"), std::string::npos) << xml;
  EXPECT_NE(xml.find("<testcase classname=\"level1\" name=\"level1/1_a\" time=\"1.500\">"), std::string::npos);
  EXPECT_NE(xml.find("<skipped message=\"no solution\"/>"), std::string::npos);
  // A pass carries its numbers; a failure its status, first error line and the numbers.
  EXPECT_NE(xml.find("speedup vs eager: 2.500x"), std::string::npos);
  EXPECT_NE(xml.find("<failure message=\"compile_error: error: expected &#39;;&#39;\" type=\"compile_error\">"),
            std::string::npos)
      << xml;
  EXPECT_NE(xml.find("<error message=\"error: runner crashed"), std::string::npos);
}

// bench writes "crash" when a candidate's run kills the harness's child: the candidate's failure,
// not a harness error; a status from another version stays an error. Every name round-trips.
TEST(Junit, ACrashIsTheCandidatesFailureAndUnknownStatusesAreErrors) {
  const std::string xml = render_junit(
      {rec("level1/9_i", "crash", -1, 1, std::nullopt, "killed by signal 9"), rec("level1/10_j", "exploded", -1, 1)},
      "s");
  EXPECT_NE(xml.find("tests=\"2\" failures=\"1\" errors=\"1\""), std::string::npos) << xml;
  EXPECT_NE(xml.find("<failure message=\"crash: killed by signal 9\" type=\"crash\">"), std::string::npos) << xml;
  for (Status st : {Status::correct, Status::incorrect, Status::compile_error, Status::crash, Status::timeout,
                    Status::error, Status::unsolved})
    EXPECT_EQ(parse_status(status_name(st)), st) << status_name(st);
  EXPECT_EQ(parse_status("exploded"), Status::other);
  EXPECT_FALSE(candidate_failure(Status::error));
  EXPECT_TRUE(candidate_failure(Status::crash));
}

TEST(Junit, EscapesMarkupControlCharactersAndBadBytes) {
  const std::string xml = render_junit(batch(), "s");
  EXPECT_NE(xml.find("name=\"level1/a&lt;b&amp;&quot;c&#39;\""), std::string::npos) << xml;
  EXPECT_EQ(xml.find("]]>"), std::string::npos);
  EXPECT_NE(xml.find("atol ]]&gt; &lt;oops&gt; &amp; "), std::string::npos);
  for (char c : xml) {
    const auto u = static_cast<unsigned char>(c);
    EXPECT_TRUE(u >= 0x20 || c == '\n') << "control character " << int(u);
    EXPECT_NE(u, 0xFFu);
  }
}

TEST(Junit, XmlEscapeHelpers) {
  EXPECT_EQ(xml_escape("a\tb\nc"), "a\tb\nc");
  EXPECT_EQ(xml_escape("a\tb\nc\r", true), "a&#9;b&#10;c&#13;");
  EXPECT_EQ(xml_escape("\x01x\x7f"), "\xEF\xBF\xBDx\x7f");
  EXPECT_EQ(xml_escape("\xC2\xB5s \xE2\x86\x92 \xF0\x9F\x9A\x80"), "\xC2\xB5s \xE2\x86\x92 \xF0\x9F\x9A\x80");
  EXPECT_EQ(xml_escape("\xEF\xBF\xBE"), "\xEF\xBF\xBD");              // U+FFFE is not an XML character
  EXPECT_EQ(xml_escape("\xED\xA0\x80"), "\xEF\xBF\xBD");              // a UTF-16 surrogate
  EXPECT_EQ(xml_escape("\xC0\xAF"), "\xEF\xBF\xBD\xEF\xBF\xBD");      // overlong
  EXPECT_EQ(xml_escape("ab\xE2\x86"), "ab\xEF\xBF\xBD\xEF\xBF\xBD");  // cut off
}

TEST(Junit, XmllintReadsItBackUnchanged) {
  if (!has_xmllint()) GTEST_SKIP() << "xmllint not found (Debian package libxml2-utils); the XML check did not run";
  test::TempDir dir;
  auto file = dir.write("junit.xml", render_junit(batch(), "kagent \"quoted\" <suite>"));
  auto lint = run_capture({"xmllint", "--noout", file.string()}, std::chrono::seconds(30));
  ASSERT_EQ(lint.exit_code, 0) << lint.output;
  EXPECT_EQ(lint.output, "");
  EXPECT_EQ(xpath(file, "count(//testsuite/testcase)"), "8");
  EXPECT_EQ(xpath(file, "count(//testcase/failure)"), "3");
  EXPECT_EQ(xpath(file, "count(//testcase/error)"), "1");
  EXPECT_EQ(xpath(file, "count(//testcase/skipped)"), "2");
  EXPECT_EQ(xpath(file, "count(//testcase/system-out)"), "2");
  // The parser gives back the original strings.
  EXPECT_EQ(xpath(file, "string(//testcase[2]/@name)"), "level1/a<b&\"c'");
  EXPECT_EQ(xpath(file, "string(/testsuites/@name)"), "kagent \"quoted\" <suite>");
  EXPECT_NE(xpath(file, "string(//testcase[3]/failure)").find("atol ]]> <oops> &"), std::string::npos);
}

TEST(Junit, TestcasesCarryTheirPrecisionAndTolerance) {
  if (!has_xmllint()) GTEST_SKIP() << "xmllint not found (Debian package libxml2-utils); the XML check did not run";
  auto rs = batch();
  rs[0].score.precision = "fp32";
  rs[0].score.tolerance = Tolerance{1e-2, 1e-3};
  test::TempDir dir;
  auto file = dir.write("junit.xml", render_junit(rs, "kagent"));
  EXPECT_EQ(xpath(file, "string(//testcase[1]/properties/property[@name='precision']/@value)"), "fp32");
  EXPECT_EQ(xpath(file, "string(//testcase[1]/properties/property[@name='atol']/@value)"), "0.01");
  EXPECT_EQ(xpath(file, "string(//testcase[1]/properties/property[@name='rtol']/@value)"), "0.001");
  EXPECT_NE(xpath(file, "string(//testcase[1]/system-out)").find("tolerance: atol 0.01, rtol 0.001"),
            std::string::npos);
  EXPECT_EQ(xpath(file, "count(//testcase[2]/properties)"), "0") << "nothing recorded, nothing claimed";
}

TEST(Junit, EmptyInputIsAValidEmptySuite) {
  const std::string xml = render_junit({}, "empty");
  EXPECT_NE(xml.find("<testsuite name=\"empty\" tests=\"0\" failures=\"0\" errors=\"0\" skipped=\"0\" time=\"0.000\">"),
            std::string::npos)
      << xml;
  if (!has_xmllint()) GTEST_SKIP() << "xmllint not found (Debian package libxml2-utils); the XML check did not run";
  test::TempDir dir;
  auto lint = run_capture({"xmllint", "--noout", dir.write("e.xml", xml).string()}, std::chrono::seconds(30));
  EXPECT_EQ(lint.exit_code, 0) << lint.output;
}
