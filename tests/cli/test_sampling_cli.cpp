// The front ends of many candidates, end to end without a GPU: `kagent bench --samples` lists and
// records samples (problems without samples need no GPU), `kagent report` on a results file of
// samples prints pass@k, fast_p@k and best-of-k beside the per-problem summary, and `kagent eval`
// with several candidates says there is no GPU once.
#include <gtest/gtest.h>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "kagent/report/results.hpp"
#include "kagent/sandbox/process.hpp"
#include "test_util.hpp"

using namespace kagent;
using namespace std::chrono_literals;

namespace {

class SamplingCli : public ::testing::Test {
 protected:
  test::TempDir tmp;
  void SetUp() override {
    for (int i = 1; i <= 3; ++i) tmp.write(fmt::format("kb/level1/{}_p{}.py", i, i), "# problem\n");
    tmp.write("samples/level1/1_p1/0.cu", "// sample\n");
    tmp.write("samples/level1/1_p1/1.cu", "// sample\n");
    tmp.write("samples/level1/1_p1/10.py", "# sample\n");
    tmp.write("samples/level1/2_p2/0.cu", "// sample\n");
  }
  ProcessResult kagent(const std::vector<std::string>& args) {
    std::vector<std::string> argv = {"env", "CUDA_VISIBLE_DEVICES=", "KAGENT_CACHE_DIR=" + (tmp / "cache").string(),
                                     (test::binary_dir() / "kagent").string()};
    argv.insert(argv.end(), args.begin(), args.end());
    return run_capture(argv, 300s);
  }
};

}  // namespace

TEST_F(SamplingCli, ListsEverySample) {
  auto r = kagent({"bench", (tmp / "kb").string(), "--samples", (tmp / "samples").string(), "--list", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  auto j = nlohmann::json::parse(r.output);
  ASSERT_EQ(j.size(), 5u);  // 3 + 1 samples, and 3_p3 without any
  EXPECT_EQ(j[0]["problem"], "level1/1_p1");
  EXPECT_NE(j[2]["sample"].get<std::string>().find("10.py"), std::string::npos);
  EXPECT_EQ(j[4]["problem"], "level1/3_p3");
  EXPECT_EQ(j[4]["sample"], "");
}

TEST_F(SamplingCli, NeedsAGpuOnlyForSamples) {
  auto r = kagent(
      {"bench", (tmp / "kb").string(), "--samples", (tmp / "samples").string(), "--out", (tmp / "r.jsonl").string()});
  EXPECT_EQ(r.exit_code, 3) << r.output;
  EXPECT_NE(r.output.find("no GPU to evaluate 4 sample(s)"), std::string::npos) << r.output;
  auto none = kagent({"bench", (tmp / "kb").string(), "--samples", (tmp / "samples").string(), "--filter", "3_p3",
                      "--out", (tmp / "u.jsonl").string()});
  EXPECT_EQ(none.exit_code, 0) << none.output;
  auto recs = report::read_results({tmp / "u.jsonl"});
  ASSERT_EQ(recs.size(), 1u);
  EXPECT_EQ(recs[0].status, "unsolved");
  // One of --solutions, --samples, --agent.
  EXPECT_EQ(kagent({"bench", (tmp / "kb").string(), "--samples", (tmp / "samples").string(), "--solutions",
                    (tmp / "samples").string()})
                .exit_code,
            2);
}

TEST_F(SamplingCli, ReportPrintsPassAtK) {
  {
    report::ResultsWriter w(tmp / "s.jsonl");
    auto add = [&](const std::string& problem, const std::string& sample, bool ok, double speedup) {
      report::ResultRecord r;
      r.problem = problem;
      r.level = "level1";
      r.sample = sample;
      r.status = ok ? "correct" : "incorrect";
      r.score.tier = ok ? 2 : -1;
      if (ok) r.score.speedup_vs_eager = speedup;
      r.score.device = "GPU";
      r.score.precision = "fp32";
      w.append(r);
    };
    for (int i = 0; i < 5; ++i) add("level1/1_p1", fmt::format("{}.cu", i), i < 2, 1.5);
    for (int i = 0; i < 5; ++i) add("level1/2_p2", fmt::format("{}.cu", i), false, 0);
  }
  auto text = kagent({"report", (tmp / "s.jsonl").string(), "--k", "1,5", "--fast-p", "1,2"});
  ASSERT_EQ(text.exit_code, 0) << text.output;
  EXPECT_NE(text.output.find("2 problems from 1 file(s), 10 samples"), std::string::npos) << text.output;
  EXPECT_NE(text.output.find("pass@5"), std::string::npos) << text.output;
  EXPECT_NE(text.output.find("fast_2.0@1"), std::string::npos) << text.output;
  EXPECT_NE(text.output.find("20.0%"), std::string::npos) << text.output;  // pass@1: (2/5 + 0) / 2
  auto json = kagent({"report", "--json", (tmp / "s.jsonl").string()});
  ASSERT_EQ(json.exit_code, 0) << json.output;
  auto j = nlohmann::json::parse(json.output);
  EXPECT_EQ(j["summary"].back()["problems"], 2);
  EXPECT_DOUBLE_EQ(j["summary"].back()["pass_rate"].get<double>(), 0.5);  // of each problem's best sample
  EXPECT_NEAR(j["sampling"].back()["pass@1"].get<double>(), 0.2, 1e-12);
  EXPECT_NEAR(j["sampling"].back()["pass@5"].get<double>(), 0.5, 1e-12);
  EXPECT_TRUE(j["sampling"].back()["pass@10"].is_null());
  EXPECT_EQ(kagent({"report", (tmp / "s.jsonl").string(), "--k", "0"}).exit_code, 2);
}

TEST_F(SamplingCli, EvalOfSeveralCandidates) {
  const std::string op = (test::examples_dir() / "vector_add/op.json").string();
  const std::string a = (test::examples_dir() / "vector_add/cand_naive.cu").string();
  const std::string b = (test::examples_dir() / "vector_add/cand_vec4.cu").string();
  // CUDA_VISIBLE_DEVICES= (in kagent()) hides a GPU this machine may have.
  auto r = kagent({"eval", a, b, "--op", op});
  EXPECT_EQ(r.exit_code, 3) << r.output;
  EXPECT_NE(r.output.find("no GPU"), std::string::npos) << r.output;
  auto bad = kagent({"eval", a, b, "--op", op, "--min-samples", "50", "--max-samples", "10"});
  EXPECT_EQ(bad.exit_code, 2) << bad.output;
}
