#pragma once
// Several samples per problem (`kagent bench --samples`): KernelBench's sampling metrics per level
// and overall, beside the summary of each problem's best sample.
//  - pass@k: the chance that at least one of k samples drawn from a problem's n is correct, by the
//    unbiased estimator 1 - C(n-c, k) / C(n, k) (c correct of n), averaged over the problems.
//  - fast_p@k: the same with c counting the samples that are correct and faster than torch eager
//    by more than p (speedup vs eager > p).
//  - best-of-k: the expected best speedup vs eager among k samples drawn from a problem's n (an
//    incorrect sample counts 0), averaged over the problems.
// A problem with no samples counts as all failed; k values above a problem's n are not estimated
// for its group (they need n >= k).
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "kagent/report/results.hpp"

namespace kagent::report {

// 1 - C(n-c, k) / C(n, k), as 1 - prod_{i=n-c+1..n} (1 - k/i): no binomial is ever formed, so it
// holds for any n. 1 when n - c < k. Requires 0 <= c <= n and 1 <= k <= n.
double pass_at_k(int n, int c, int k);

// The expected largest of k values drawn without replacement from `values` (k <= values.size()):
// sum over the ascending order of v_(i) * C(i-1, k-1) / C(n, k), the weights by their ratios.
double expected_best_of_k(std::vector<double> values, int k);

// Whether the records are samples (any has a sample name).
bool has_samples(const std::vector<ResultRecord>& records);

// Each problem's best sample (highest tier, then the fastest, then the first by name): the record
// the per-problem summary (summarize) is computed over. Records without samples pass through.
std::vector<ResultRecord> best_sample_per_problem(const std::vector<ResultRecord>& records);

struct SamplingOptions {
  std::vector<int> ks = {1, 5, 10};  // the k of pass@k, fast_p@k and best-of-k
  std::vector<double> ps = {1.0};    // the thresholds p of fast_p@k
};

struct SamplingSummary {
  std::string group;  // a level, or "overall"
  int problems = 0;
  int samples = 0;
  int min_n = 0, max_n = 0;  // samples per problem
  struct AtK {
    int k = 0;
    std::optional<double> pass;               // nullopt: k above some problem's n
    std::vector<std::optional<double>> fast;  // one per SamplingOptions::ps
    std::optional<double> best;               // best-of-k speedup vs eager
  };
  std::vector<AtK> at;     // one per SamplingOptions::ks
  std::vector<double> ps;  // the thresholds, as asked
};

// One per level (sorted), then "overall". Records without a sample (a problem none was found for)
// count as a problem with n = 0.
std::vector<SamplingSummary> summarize_samples(const std::vector<ResultRecord>& records,
                                               const SamplingOptions& options = {});

// {"group", "problems", "samples", "min_n", "max_n", "pass@1", ..., "fast_1.0@1", ..., "best_of_1", ...};
// null where not estimated.
void to_json(nlohmann::json& j, const SamplingSummary& s);

// A text or Markdown table: a row per group, a column per metric and k; "-" where not estimated.
std::string render_sampling(const std::vector<SamplingSummary>& s, bool markdown);

}  // namespace kagent::report
