// pass@k, fast_p@k and best-of-k over samples (report/sampling.hpp): the stable estimator equals
// the binomial form where that can be computed, holds where it cannot, and the per-level summary
// and each problem's best sample come out of a results file with samples.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>

#include <nlohmann/json.hpp>

#include "kagent/report/results.hpp"
#include "kagent/report/sampling.hpp"
#include "test_util.hpp"

using namespace kagent;
using namespace kagent::report;

namespace {

double binomial(int n, int k) {
  if (k < 0 || k > n) return 0;
  double r = 1;
  for (int i = 1; i <= k; ++i) r = r * (n - k + i) / i;
  return r;
}

ResultRecord sample(const std::string& problem, const std::string& name, bool correct, double speedup = 1.0) {
  ResultRecord r;
  r.problem = problem;
  r.level = problem.substr(0, problem.find('/'));
  r.sample = name;
  r.status = correct ? "correct" : "incorrect";
  r.score.tier = correct ? (speedup > 1 ? 2 : 1) : -1;
  if (correct) r.score.speedup_vs_eager = speedup;
  return r;
}

}  // namespace

TEST(Sampling, PassAtKMatchesTheBinomialForm) {
  for (int n = 1; n <= 20; ++n)
    for (int c = 0; c <= n; ++c)
      for (int k = 1; k <= n; ++k) {
        const double exact = 1.0 - binomial(n - c, k) / binomial(n, k);
        EXPECT_NEAR(pass_at_k(n, c, k), exact, 1e-12) << n << " " << c << " " << k;
      }
  EXPECT_DOUBLE_EQ(pass_at_k(10, 0, 5), 0.0);
  EXPECT_DOUBLE_EQ(pass_at_k(10, 10, 1), 1.0);
  EXPECT_DOUBLE_EQ(pass_at_k(10, 3, 1), 0.3);
}

TEST(Sampling, PassAtKHoldsWhereBinomialsOverflow) {
  // C(5000, 2500) is about 10^1503: the product form never forms it.
  const double p = pass_at_k(5000, 1, 2500);
  EXPECT_NEAR(p, 0.5, 1e-12);
  const double q = pass_at_k(5000, 3, 100);
  EXPECT_TRUE(std::isfinite(q));
  EXPECT_NEAR(q, 1 - std::pow(1 - 100.0 / 5000, 3), 1e-3);
}

TEST(Sampling, ExpectedBestOfKIsTheMeanOfEverySubsetsBest) {
  const std::vector<double> v = {0, 1.5, 0.7, 3.0, 0, 2.2, 1.1};
  const int n = static_cast<int>(v.size());
  for (int k = 1; k <= n; ++k) {
    double sum = 0;
    int subsets = 0;
    for (unsigned mask = 0; mask < (1u << n); ++mask) {
      if (__builtin_popcount(mask) != k) continue;
      double best = 0;
      for (int i = 0; i < n; ++i)
        if (mask & (1u << i)) best = std::max(best, v[i]);
      sum += best;
      ++subsets;
    }
    EXPECT_NEAR(expected_best_of_k(v, k), sum / subsets, 1e-12) << k;
  }
  EXPECT_DOUBLE_EQ(expected_best_of_k(v, 1), (0 + 1.5 + 0.7 + 3.0 + 0 + 2.2 + 1.1) / 7);
  EXPECT_DOUBLE_EQ(expected_best_of_k(v, n), 3.0);
}

TEST(Sampling, SummaryPerLevelAndOverall) {
  std::vector<ResultRecord> rs;
  // level1/a: 2 of 4 correct (speedups 2.0 and 0.5); level1/b: 0 of 4; level2/c: 4 of 4 at 1.2.
  rs.push_back(sample("level1/a", "0.cu", true, 2.0));
  rs.push_back(sample("level1/a", "1.cu", false));
  rs.push_back(sample("level1/a", "2.cu", true, 0.5));
  rs.push_back(sample("level1/a", "3.cu", false));
  for (int i = 0; i < 4; ++i) rs.push_back(sample("level1/b", std::to_string(i) + ".cu", false));
  for (int i = 0; i < 4; ++i) rs.push_back(sample("level2/c", std::to_string(i) + ".py", true, 1.2));
  SamplingOptions o;
  o.ks = {1, 2, 8};
  o.ps = {1.0, 1.5};
  auto s = summarize_samples(rs, o);
  ASSERT_EQ(s.size(), 3u);
  EXPECT_EQ(s[0].group, "level1");
  EXPECT_EQ(s[2].group, "overall");
  EXPECT_EQ(s[0].problems, 2);
  EXPECT_EQ(s[0].samples, 8);
  // level1 pass@1: (2/4 + 0) / 2; pass@2: (1 - C(2,2)/C(4,2) + 0) / 2 = (5/6) / 2.
  EXPECT_NEAR(*s[0].at[0].pass, 0.25, 1e-12);
  EXPECT_NEAR(*s[0].at[1].pass, (5.0 / 6) / 2, 1e-12);
  EXPECT_FALSE(s[0].at[2].pass.has_value());  // k = 8 above n = 4
  // fast_1.0@1: only a/0 (2.0x): (1/4) / 2; fast_1.5@1 the same; overall fast_1.0@1: (1/4 + 0 + 1) / 3.
  EXPECT_NEAR(*s[0].at[0].fast[0], 0.125, 1e-12);
  EXPECT_NEAR(*s[0].at[0].fast[1], 0.125, 1e-12);
  EXPECT_NEAR(*s[2].at[0].fast[0], (0.25 + 0 + 1) / 3, 1e-12);
  EXPECT_NEAR(*s[2].at[0].fast[1], 0.25 / 3, 1e-12);  // 1.2x is not above 1.5
  // best-of-1 for a: (2 + 0 + 0.5 + 0) / 4; level1: that over 2 problems.
  EXPECT_NEAR(*s[0].at[0].best, 2.5 / 4 / 2, 1e-12);
  EXPECT_NEAR(*s[1].at[0].best, 1.2, 1e-12);

  const nlohmann::json j = s[0];
  EXPECT_NEAR(j["pass@1"].get<double>(), 0.25, 1e-12);
  EXPECT_TRUE(j.contains("fast_1.5@2"));
  EXPECT_TRUE(j["pass@8"].is_null());
  EXPECT_TRUE(j.contains("best_of_2"));
  const std::string text = render_sampling(s, false);
  EXPECT_NE(text.find("pass@1"), std::string::npos) << text;
  EXPECT_NE(text.find("fast_1.5@2"), std::string::npos) << text;
  EXPECT_NE(text.find("best-of-2"), std::string::npos) << text;
  EXPECT_NE(text.find("25.0%"), std::string::npos) << text;
  EXPECT_NE(render_sampling(s, true).find("| group |"), std::string::npos);
}

TEST(Sampling, ProblemWithoutSamplesCountsAsFailed) {
  std::vector<ResultRecord> rs = {sample("level1/a", "0.cu", true, 1.0), sample("level1/a", "1.cu", true, 1.0)};
  ResultRecord none;
  none.problem = "level1/z";
  none.level = "level1";
  none.status = "unsolved";
  rs.push_back(none);
  auto s = summarize_samples(rs, {});
  EXPECT_EQ(s[0].problems, 2);
  EXPECT_EQ(s[0].min_n, 2);
  EXPECT_NEAR(*s[0].at[0].pass, 0.5, 1e-12);
  EXPECT_FALSE(s[0].at[1].pass.has_value());  // k = 5 above n = 2
}

TEST(Sampling, BestSamplePerProblem) {
  std::vector<ResultRecord> rs = {sample("level1/a", "0.cu", false),     sample("level1/a", "1.cu", true, 1.1),
                                  sample("level1/a", "2.cu", true, 3.0), sample("level1/a", "3.cu", true, 3.0),
                                  sample("level1/b", "0.cu", false),     sample("level1/b", "1.cu", false)};
  auto best = best_sample_per_problem(rs);
  ASSERT_EQ(best.size(), 2u);
  EXPECT_EQ(best[0].sample, "2.cu");  // fastest, the first by name of the tied two
  EXPECT_EQ(best[1].sample, "0.cu");
  EXPECT_TRUE(has_samples(rs));
  auto summary = summarize(best);
  EXPECT_EQ(summary.back().problems, 2);
  EXPECT_DOUBLE_EQ(summary.back().pass_rate, 0.5);
}

// A results file with samples keeps a record per sample (a rerun of one sample replaces only it),
// and the sample name survives the round trip.
TEST(Sampling, ResultsFileKeepsEverySample) {
  test::TempDir tmp;
  const auto path = tmp / "r.jsonl";
  {
    ResultsWriter w(path);
    w.append(sample("level1/a", "10.cu", false));
    w.append(sample("level1/a", "2.cu", false));
    w.append(sample("level1/a", "10.cu", true, 2.0));  // rerun (resume): the last record wins
    ResultRecord plain;
    plain.problem = "level1/b";
    plain.level = "level1";
    plain.status = "correct";
    w.append(plain);
  }
  auto rs = read_results({path});
  ASSERT_EQ(rs.size(), 3u);
  EXPECT_EQ(rs[0].sample, "2.cu");  // natural order
  EXPECT_EQ(rs[1].sample, "10.cu");
  EXPECT_TRUE(rs[1].correct());
  EXPECT_EQ(rs[2].sample, "");
  EXPECT_EQ(nlohmann::json(rs[1])["sample"], "10.cu");
  EXPECT_FALSE(nlohmann::json(rs[2]).contains("sample"));
}
