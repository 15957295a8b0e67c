// The reference server times eager and torch.compile with tools/kagent_wire/stats.py; the runner
// times candidates with src/protocol/stats.cpp. Both must compute the same summary and stop at the
// same sample, or the reward would compare numbers measured by different rules.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include <nlohmann/json.hpp>

#include "kagent/protocol/protocol.hpp"
#include "kagent/protocol/stats.hpp"
#include "kagent/sandbox/process.hpp"
#include "test_util.hpp"

using namespace kagent;

namespace {

// `rule` and each sample's busy time (`busy`, set-up included) as the runner sends them.
nlohmann::json python_stats(const std::vector<double>& samples, double wall_s, const StopRule& rule = {},
                            const std::vector<double>& busy = {}) {
  const std::string script =
      "import json, sys\n"
      "from kagent_wire import stats\n"
      "d = json.load(sys.stdin)\n"
      "rule = dict(stats.DEFAULT_RULE, **d['rule'])\n"
      "out = {'summary': stats.summarize(d['s']), 'stops': []}\n"
      "for n in range(1, len(d['s']) + 1):\n"
      "    busy = sum(d['busy'][:n]) / 1000.0 if d['busy'] else None\n"
      "    out['stops'].append(stats.should_stop(d['s'][:n], d['wall'], rule, busy))\n"
      "print(json.dumps(out))\n";
  auto r = run_capture({"env", "PYTHONPATH=" + (test::source_dir() / "tools").string(), "python3", "-c", script},
                       std::chrono::seconds(60),
                       nlohmann::json({{"s", samples}, {"wall", wall_s}, {"rule", rule}, {"busy", busy}}).dump());
  if (!r.started || r.exit_code != 0) throw std::runtime_error("python3 failed: " + r.output);
  return nlohmann::json::parse(r.output);
}

}  // namespace

TEST(RefStatsParity, SummaryAndStoppingRuleMatchTheRunner) {
  if (find_in_path("python3").empty()) GTEST_SKIP() << "python3 not installed";
  std::mt19937 rng(7);
  for (double spread : {0.0005, 0.01, 0.2}) {  // converges early, converges late, hits a cap
    std::normal_distribution<double> d(0.05, 0.05 * spread);
    std::vector<double> s;
    for (int i = 0; i < 1200; ++i) s.push_back(std::max(1e-4, d(rng)));
    auto py = python_stats(s, 1.0);
    TimingSummary c = summarize(s);
    const auto& ps = py["summary"];
    EXPECT_EQ(ps["n"].get<int>(), c.n);
    for (auto [key, v] : std::vector<std::pair<const char*, double>>{{"median_ms", c.median_ms},
                                                                     {"mean_ms", c.mean_ms},
                                                                     {"p10_ms", c.p10_ms},
                                                                     {"p90_ms", c.p90_ms},
                                                                     {"stdev_ms", c.stdev_ms},
                                                                     {"rse_median", c.rse_median}})
      EXPECT_NEAR(ps[key].get<double>(), v, 1e-9 * std::max(1.0, std::abs(v))) << key << " spread " << spread;
    // The first sample at which each side stops, and why.
    int c_stop = -1, p_stop = -1;
    std::string c_reason, p_reason;
    for (size_t n = 1; n <= s.size(); ++n) {
      std::vector<double> prefix(s.begin(), s.begin() + static_cast<long>(n));
      auto dec = should_stop(prefix, 1.0, StopRule{});
      if (c_stop < 0 && dec.stop) c_stop = static_cast<int>(n), c_reason = dec.reason;
      const auto& pj = py["stops"][n - 1];
      if (p_stop < 0 && !pj.is_null()) p_stop = static_cast<int>(n), p_reason = pj.get<std::string>();
    }
    EXPECT_EQ(c_stop, p_stop) << "spread " << spread;
    EXPECT_EQ(c_reason, p_reason) << "spread " << spread;
    EXPECT_GT(c_stop, 0);
  }
}

// The training preset's rule counts each sample's set-up toward its GPU time: both sides stop at the
// same sample, earlier than by the timed spans alone.
TEST(RefStatsParity, ARuleThatCountsSetUpStopsAtTheSameSampleOnBothSides) {
  if (find_in_path("python3").empty()) GTEST_SKIP() << "python3 not installed";
  std::mt19937 rng(11);
  std::normal_distribution<double> d(0.05, 0.0001);
  std::vector<double> s, busy;
  for (int i = 0; i < 600; ++i) {
    s.push_back(std::max(1e-4, d(rng)));
    busy.push_back(s.back() + 0.06);  // poison and flush: about the kernel's time again
  }
  StopRule rule;
  rule.min_samples = 10;
  rule.min_gpu_s = 0.02;
  rule.max_samples = 500;
  rule.max_gpu_s = 0.5;
  rule.count_setup = true;
  auto py = python_stats(s, 1.0, rule, busy);
  int c_stop = -1, p_stop = -1, spans_stop = -1;
  double busy_s = 0;
  for (size_t n = 1; n <= s.size(); ++n) {
    std::vector<double> prefix(s.begin(), s.begin() + static_cast<long>(n));
    busy_s += busy[n - 1] / 1000.0;
    if (c_stop < 0 && should_stop(prefix, 1.0, rule, busy_s).stop) c_stop = static_cast<int>(n);
    StopRule spans = rule;
    spans.count_setup = false;
    if (spans_stop < 0 && should_stop(prefix, 1.0, spans, busy_s).stop) spans_stop = static_cast<int>(n);
    if (p_stop < 0 && !py["stops"][n - 1].is_null()) p_stop = static_cast<int>(n);
  }
  EXPECT_EQ(c_stop, p_stop);
  EXPECT_NEAR(c_stop, 20.0 / 0.11, 2) << "20 ms of 110 us samples";
  EXPECT_NEAR(spans_stop, 20.0 / 0.05, 2) << "20 ms of 50 us spans";
}
