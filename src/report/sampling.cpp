// pass@k, fast_p@k and best-of-k over the samples of each problem (report/sampling.hpp).
#include "kagent/report/sampling.hpp"

#include <algorithm>
#include <limits>
#include <map>

#include <fmt/format.h>

#include "kagent/common/natural_order.hpp"
#include "kagent/common/text_table.hpp"

namespace kagent::report {

double pass_at_k(int n, int c, int k) {
  if (n - c < k) return 1.0;
  double all_fail = 1.0;  // C(n-c, k) / C(n, k)
  for (int i = n - c + 1; i <= n; ++i) all_fail *= 1.0 - static_cast<double>(k) / i;
  return 1.0 - all_fail;
}

double expected_best_of_k(std::vector<double> values, int k) {
  const int n = static_cast<int>(values.size());
  if (k < 1 || k > n) return 0;
  std::sort(values.begin(), values.end());
  // The i-th smallest (1-based) is the largest of the k drawn with probability C(i-1, k-1) / C(n, k):
  // k/n for i = n, and w(i-1) = w(i) (i-k)/(i-1) below it.
  double w = static_cast<double>(k) / n, sum = 0;
  for (int i = n; i >= k; --i) {
    sum += w * values[i - 1];
    if (i > 1) w *= static_cast<double>(i - k) / (i - 1);
  }
  return sum;
}

bool has_samples(const std::vector<ResultRecord>& records) {
  return std::any_of(records.begin(), records.end(), [](const ResultRecord& r) { return !r.sample.empty(); });
}

namespace {

double speedup_or_zero(const ResultRecord& r) {
  return r.correct() && r.score.speedup_vs_eager ? *r.score.speedup_vs_eager : 0.0;
}

// Higher tier, then faster (higher speedup vs eager), wins.
bool better(const ResultRecord& a, const ResultRecord& b) {
  if (a.correct() != b.correct()) return a.correct();
  if (a.score.tier != b.score.tier) return a.score.tier > b.score.tier;
  return speedup_or_zero(a) > speedup_or_zero(b);
}

std::string p_text(double p) {
  std::string s = fmt::format("{:g}", p);
  if (s.find_first_of(".e") == std::string::npos) s += ".0";
  return s;
}

// A problem's samples: the records with a sample name (a record without one stands for a problem
// none was found for).
struct ProblemSamples {
  std::string level;
  std::vector<const ResultRecord*> samples;
};

}  // namespace

std::vector<ResultRecord> best_sample_per_problem(const std::vector<ResultRecord>& records) {
  std::vector<ResultRecord> out;
  std::map<std::string, size_t> at;  // problem -> index in out
  for (const auto& r : records) {
    auto it = at.find(r.problem);
    if (it == at.end()) {
      at[r.problem] = out.size();
      out.push_back(r);
    } else if (!r.sample.empty() && (out[it->second].sample.empty() || better(r, out[it->second]) ||
                                     (!better(out[it->second], r) && natural_less(r.sample, out[it->second].sample)))) {
      out[it->second] = r;
    }
  }
  return out;
}

std::vector<SamplingSummary> summarize_samples(const std::vector<ResultRecord>& records,
                                               const SamplingOptions& options) {
  std::map<std::string, ProblemSamples> problems;
  for (const auto& r : records) {
    ProblemSamples& p = problems[r.problem];
    p.level = r.level;
    if (!r.sample.empty()) p.samples.push_back(&r);
  }
  std::map<std::string, std::vector<const ProblemSamples*>> groups;
  for (const auto& [id, p] : problems) {
    groups[p.level.empty() ? "(no level)" : p.level].push_back(&p);
    groups["overall"].push_back(&p);
  }
  std::vector<std::string> order;
  for (const auto& [g, _] : groups)
    if (g != "overall") order.push_back(g);
  std::sort(order.begin(), order.end(), [](const std::string& a, const std::string& b) { return natural_less(a, b); });
  if (!groups.empty()) order.push_back("overall");

  std::vector<SamplingSummary> out;
  for (const auto& g : order) {
    const auto& ps = groups[g];
    SamplingSummary s;
    s.group = g;
    s.ps = options.ps;
    s.problems = static_cast<int>(ps.size());
    s.min_n = std::numeric_limits<int>::max();
    for (const ProblemSamples* p : ps) {
      const int n = static_cast<int>(p->samples.size());
      s.samples += n;
      if (n > 0) s.min_n = std::min(s.min_n, n);
      s.max_n = std::max(s.max_n, n);
    }
    if (s.min_n == std::numeric_limits<int>::max()) s.min_n = 0;
    for (int k : options.ks) {
      SamplingSummary::AtK at;
      at.k = k;
      at.fast.assign(options.ps.size(), std::nullopt);
      // Estimated only when every problem that has samples has at least k of them.
      if (k >= 1 && s.min_n >= k && s.problems > 0) {
        double pass = 0, best = 0;
        std::vector<double> fast(options.ps.size(), 0.0);
        for (const ProblemSamples* p : ps) {
          const int n = static_cast<int>(p->samples.size());
          if (n == 0) continue;  // no samples: counts as failed (0)
          int c = 0;
          std::vector<double> speedups;
          for (const ResultRecord* r : p->samples) {
            c += r->correct();
            speedups.push_back(speedup_or_zero(*r));
          }
          pass += pass_at_k(n, c, k);
          for (size_t i = 0; i < options.ps.size(); ++i) {
            int cp = 0;
            for (double v : speedups) cp += v > options.ps[i];
            fast[i] += pass_at_k(n, cp, k);
          }
          best += expected_best_of_k(speedups, k);
        }
        at.pass = pass / s.problems;
        at.best = best / s.problems;
        for (size_t i = 0; i < fast.size(); ++i) at.fast[i] = fast[i] / s.problems;
      }
      s.at.push_back(at);
    }
    out.push_back(std::move(s));
  }
  return out;
}

void to_json(nlohmann::json& j, const SamplingSummary& s) {
  auto opt = [](const std::optional<double>& v) { return v ? nlohmann::json(*v) : nlohmann::json(); };
  j = {{"group", s.group}, {"problems", s.problems}, {"samples", s.samples}, {"min_n", s.min_n}, {"max_n", s.max_n}};
  for (const auto& at : s.at) {
    j[fmt::format("pass@{}", at.k)] = opt(at.pass);
    for (size_t i = 0; i < s.ps.size(); ++i) j[fmt::format("fast_{}@{}", p_text(s.ps[i]), at.k)] = opt(at.fast[i]);
    j[fmt::format("best_of_{}", at.k)] = opt(at.best);
  }
}

std::string render_sampling(const std::vector<SamplingSummary>& summaries, bool markdown) {
  if (summaries.empty()) return {};
  std::vector<std::string> head = {"group", "problems", "samples"};
  const SamplingSummary& first = summaries.front();
  for (const auto& at : first.at) head.push_back(fmt::format("pass@{}", at.k));
  for (double p : first.ps)
    for (const auto& at : first.at) head.push_back(fmt::format("fast_{}@{}", p_text(p), at.k));
  for (const auto& at : first.at) head.push_back(fmt::format("best-of-{}", at.k));
  auto pct = [](const std::optional<double>& v) { return v ? fmt::format("{:.1f}%", 100 * *v) : std::string("-"); };
  auto x = [](const std::optional<double>& v) { return v ? fmt::format("{:.3f}x", *v) : std::string("-"); };
  std::vector<std::vector<std::string>> rows;
  for (const auto& s : summaries) {
    std::vector<std::string> row = {s.group, std::to_string(s.problems),
                                    s.min_n == s.max_n ? fmt::format("{} ({} each)", s.samples, s.max_n)
                                                       : fmt::format("{} ({}-{} each)", s.samples, s.min_n, s.max_n)};
    for (const auto& at : s.at) row.push_back(pct(at.pass));
    for (size_t i = 0; i < s.ps.size(); ++i)
      for (const auto& at : s.at) row.push_back(pct(at.fast[i]));
    for (const auto& at : s.at) row.push_back(x(at.best));
    rows.push_back(std::move(row));
  }
  const std::string note =
      "pass@k, fast_p@k: unbiased estimates over k of each problem's n samples (fast_p: correct and > p x "
      "eager); best-of-k: expected best speedup vs eager of k samples (incorrect = 0); \"-\": k above some "
      "problem's n\n";
  TextTable t(head);
  for (auto& r : rows) t.add_row(r);
  return markdown ? t.render_markdown() + "\n" + note : t.render() + note;
}

}  // namespace kagent::report
