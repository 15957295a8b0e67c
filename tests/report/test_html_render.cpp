// The HTML report in a real browser: headless chromium loads a realistic report, its DOM after
// rendering still holds the tables and charts, and its screenshot is not blank (a page that fails
// to render, or renders white, compresses to the size of an empty page's screenshot).
// KAGENT_REPORT_SCREENSHOT=path keeps the screenshot for a person to look at.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>

#include "kagent/report/html.hpp"
#include "kagent/sandbox/process.hpp"
#include "test_util.hpp"

using namespace kagent;
using namespace kagent::report;

namespace {

ResultRecord rec(const std::string& problem, const std::string& status, int tier, std::optional<double> cand_ms,
                 std::optional<double> eager_ms, std::optional<double> compile_ms, const std::string& error = "") {
  ResultRecord r;
  r.problem = problem;
  r.level = problem.substr(0, problem.find('/'));
  r.status = status;
  r.score.tier = tier;
  r.score.candidate_ms = cand_ms;
  r.score.eager_ms = eager_ms;
  r.score.compile_ms = compile_ms;
  if (cand_ms && eager_ms) r.score.speedup_vs_eager = *eager_ms / *cand_ms;
  if (cand_ms && compile_ms) r.score.speedup_vs_compile = *compile_ms / *cand_ms;
  r.error = error;
  r.wall_s = 42;
  return r;
}

// Twelve problems over three levels, with every status and tier, and agent runs with their turns.
std::vector<ResultRecord> realistic() {
  std::vector<ResultRecord> rs = {
      rec("level1/19_ReLU", "correct", 3, 0.081, 0.212, 0.105),
      rec("level1/23_Softmax", "correct", 3, 0.150, 0.610, 0.300),
      rec("level1/1_Square_matrix_multiplication_", "correct", 1, 3.900, 2.950, 2.900),
      rec("level1/36_RMSNorm_", "correct", 2, 0.400, 0.520, 0.390),
      rec("level1/40_LayerNorm", "incorrect", -1, std::nullopt, 0.730, 0.510,
          "output 0: max abs error 0.031 > atol 0.01 at [3, 17]"),
      rec("level2/12_Gemm_Multiply_LeakyReLU", "correct", 3, 0.210, 0.640, 0.330),
      rec("level2/17_Conv2d_InstanceNorm_Divide", "correct", 2, 1.100, 1.350, 1.050),
      rec("level2/33_Gemm_Scale_BatchNorm", "compile_error", -1, std::nullopt, 0.810, 0.600,
          "kernel.cu(41): error: identifier \"__shfl_down\" is undefined <sm_90a>"),
      rec("level2/40_Matmul_Scaling_ResidualAdd", "timeout", -1, std::nullopt, 0.450, 0.300, "ran past 600 s"),
      rec("level3/1_MLP", "correct", 2, 0.900, 1.300, 0.800),
      rec("level3/28_VisionTransformer", "unsolved", -1, std::nullopt, 6.200, 4.100),
      rec("level3/44_MiniGPTBlock", "error", -1, std::nullopt, std::nullopt, std::nullopt,
          "runner exited with signal 11 & no output")};
  rs[0].best_by_turn = {{1, 1.2}, {3, 2.1}, {6, 2.6}};
  rs[5].best_by_turn = {{2, 0.7}, {4, 1.5}, {9, 3.05}};
  rs[6].best_by_turn = {{1, 0.9}, {5, 1.23}};
  rs[9].best_by_turn = {{3, 1.1}, {8, 1.44}};
  return rs;
}

std::string find_chromium() {
  for (const char* name : {"chromium", "chromium-browser"})
    if (auto p = find_in_path(name); !p.empty()) return p;
  return "";
}

// Runs chromium headless on a file with the given extra arguments; its own profile folder, so
// runs do not share state with each other or with a desktop session.
ProcessResult chromium(const std::string& exe, const test::TempDir& dir, const std::filesystem::path& page,
                       const std::string& mode) {
  return run_capture({exe, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
                      "--hide-scrollbars", "--user-data-dir=" + (dir / "profile").string(), "--window-size=1200,1600",
                      mode, "file://" + page.string()},
                     std::chrono::seconds(120));
}

}  // namespace

TEST(HtmlRender, HeadlessChromiumRendersTheReport) {
  const std::string exe = find_chromium();
  if (exe.empty()) GTEST_SKIP() << "chromium not found (Debian package chromium); the HTML render check did not run";
  test::TempDir dir;
  const auto records = realistic();
  const auto page = dir.write("report.html", render_html(records, summarize(records), "kagent report: demo"));
  const auto blank = dir.write("blank.html", "<html><body></body></html>");

  // The DOM after parsing and layout still holds what the report is for.
  auto dom = chromium(exe, dir, page, "--dump-dom");
  ASSERT_FALSE(dom.timed_out) << dom.output;
  ASSERT_EQ(dom.exit_code, 0) << dom.output;
  for (const char* id : {"<table id=\"summary\">", "<table id=\"problems\">", "<svg id=\"speedups\"",
                         "<svg id=\"tiers\"", "<svg id=\"turns\"", "level2/12_Gemm_Multiply_LeakyReLU"})
    EXPECT_NE(dom.output.find(id), std::string::npos) << id << " missing from the rendered DOM";

  const auto shot = dir / "report.png", blank_shot = dir / "blank.png";
  auto r = chromium(exe, dir, page, "--screenshot=" + shot.string());
  ASSERT_FALSE(r.timed_out) << r.output;
  ASSERT_TRUE(std::filesystem::exists(shot)) << r.output;
  auto b = chromium(exe, dir, blank, "--screenshot=" + blank_shot.string());
  ASSERT_FALSE(b.timed_out) << b.output;
  ASSERT_TRUE(std::filesystem::exists(blank_shot)) << b.output;
  const auto report_bytes = std::filesystem::file_size(shot), blank_bytes = std::filesystem::file_size(blank_shot);
  EXPECT_GE(report_bytes, 3 * blank_bytes) << "the report's screenshot (" << report_bytes
                                           << " bytes) is about as small as a blank page's (" << blank_bytes << ")";
  if (const char* keep = std::getenv("KAGENT_REPORT_SCREENSHOT"); keep != nullptr && *keep != '\0')
    std::filesystem::copy_file(shot, keep, std::filesystem::copy_options::overwrite_existing);
}
