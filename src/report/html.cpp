#include "kagent/report/html.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <iterator>
#include <map>
#include <optional>

#include <fmt/format.h>

#include "kagent/common/utf8.hpp"
#include "kagent/report/junit.hpp"

namespace kagent::report {

namespace {

// Every chart is drawn in a 1000-unit-wide viewBox and scaled to the page's width by CSS.
constexpr double kWidth = 1000;

// Tier buckets: 0 = not correct (tier -1, unsolved or failed), then tiers 1 to 3. One palette for
// the bars of the speedup chart and the tier chart, so a colour means the same thing in both.
constexpr std::array<const char*, 4> kTierColour = {"#c3c9d2", "#e9a23b", "#4a8fd9", "#2e9d5a"};
constexpr std::array<const char*, 4> kTierLabel = {"not correct", "tier 1: correct", "tier 2: faster than eager",
                                                   "tier 3: also beats torch.compile"};

// Lines of the turn chart, one per problem: a palette that stays apart on white.
constexpr std::array<const char*, 10> kLineColour = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
                                                     "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"};

constexpr const char* kStyle = R"(
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,Helvetica,Arial,sans-serif;color:#1d2430;background:#f5f6f8;margin:0}
main{max-width:1100px;margin:0 auto;padding:24px 24px 48px}
h1{font-size:22px;margin:0 0 4px}
h2{font-size:16px;margin:0 0 10px}
section{background:#fff;border:1px solid #e0e3e8;border-radius:6px;padding:14px 16px;margin:16px 0}
.meta,.note{color:#5b6573;font-size:13px;margin:0}
.scroll{overflow-x:auto}
table{border-collapse:collapse;width:100%;font-size:13px}
th,td{padding:4px 8px;border-bottom:1px solid #eceff2;text-align:left;vertical-align:top}
th{background:#f0f2f5;font-weight:600;white-space:nowrap}
.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
tbody tr:nth-child(even){background:#fafbfc}
tr.overall td{font-weight:600;border-top:2px solid #cfd4da}
td.name{overflow-wrap:anywhere;min-width:140px}
td.err{min-width:240px;font-family:ui-monospace,Menlo,Consolas,monospace;font-size:12px;color:#7a3b31;overflow-wrap:anywhere}
.st{display:inline-block;padding:0 7px;border-radius:9px;font-size:12px;white-space:nowrap;background:#eceff2;color:#4b5563}
.st-correct{background:#dcf2e3;color:#1d6b3a}
.st-incorrect,.st-compile_error,.st-crash,.st-timeout{background:#fbe3e1;color:#9b2c20}
.st-error{background:#fde9cf;color:#8a4b08}
svg{display:block;max-width:100%;height:auto}
svg text{font-size:12px;fill:#2b3340}
svg .tick{font-size:11px;fill:#6b7480}
svg .muted{fill:#8a929c;font-style:italic}
.legend{display:flex;flex-wrap:wrap;gap:4px 14px;font-size:12px;margin-top:8px}
.sw{display:inline-block;width:10px;height:10px;border-radius:2px;margin-right:4px;vertical-align:-1px}
)";

using Out = std::back_insert_iterator<std::string>;

std::string esc(std::string_view s) {
  return xml_escape(s);
}

std::optional<double> finite(const std::optional<double>& v) {
  return v && std::isfinite(*v) ? v : std::nullopt;
}

// A speedup that can be drawn on a log axis.
std::optional<double> drawable(const std::optional<double>& v) {
  return finite(v) && *v > 0 ? v : std::nullopt;
}

int bucket(const ResultRecord& r) {
  return r.correct() ? std::clamp(r.score.tier, 1, 3) : 0;
}

std::string level_of(const ResultRecord& r) {
  return r.level.empty() ? "(no level)" : r.level;
}

// A log10 axis mapping [lo, hi] (values, not logs) onto the pixel range [p0, p1]; values outside
// are clamped to the edge. The domain always holds 1.0x, so the parity line is on the chart.
struct LogAxis {
  double lo = 0, hi = 1;  // log10 of the domain's ends
  double p0 = 0, p1 = 1;
  LogAxis(double vmin, double vmax, double p0_, double p1_) : p0(p0_), p1(p1_) {
    // Speedups beyond 1000x either way are measurement artefacts: they must not squash the rest.
    vmin = std::clamp(std::min(vmin, 1.0), 1e-3, 1.0);
    vmax = std::clamp(std::max(vmax, 1.0), 1.0, 1e3);
    lo = std::log10(vmin) - 0.08;
    hi = std::log10(vmax) + 0.08;
    if (hi - lo < 0.6) {  // a little context around 1.0x when every value is close to it
      const double pad = (0.6 - (hi - lo)) / 2;
      lo -= pad;
      hi += pad;
    }
  }
  double operator()(double v) const {
    const double l = std::clamp(std::log10(std::max(v, 1e-300)), lo, hi);
    return p0 + (l - lo) / (hi - lo) * (p1 - p0);
  }
  // Denser ticks on a short domain (most batches sit between 0.5x and 5x), decades alone on a long one.
  std::vector<double> ticks() const {
    static const std::vector<double> dense = {1, 1.5, 2, 3, 5, 7}, mid = {1, 2, 5}, sparse = {1};
    const auto& mantissas = hi - lo < 1.2 ? dense : hi - lo <= 3 ? mid : sparse;
    std::vector<double> out;
    for (int d = static_cast<int>(std::floor(lo)); d <= static_cast<int>(std::ceil(hi)); ++d)
      for (double m : mantissas) {
        const double v = m * std::pow(10.0, d);
        const double l = std::log10(v);
        if (l >= lo && l <= hi) out.push_back(v);
      }
    return out;
  }
};

std::string times(const std::optional<double>& v, const char* spec = "{:.2f}x") {
  return finite(v) ? fmt::format(fmt::runtime(spec), *v) : std::string("-");
}

std::string pct(double v) {
  return std::isfinite(v) ? fmt::format("{:.1f}%", 100 * v) : std::string("-");
}

void summary_table(Out out, const std::vector<Summary>& summary) {
  fmt::format_to(out,
                 "<section><h2>Summary</h2><div class=\"scroll\"><table id=\"summary\"><thead><tr><th>group</th>"
                 "<th class=\"num\">problems</th><th class=\"num\">pass</th><th class=\"num\">&gt; eager</th>"
                 "<th class=\"num\">tier 3</th><th class=\"num\">geomean vs eager</th>"
                 "<th class=\"num\">geomean vs compile</th><th class=\"num\">fast_1.0</th>"
                 "<th class=\"num\">fast_1.5</th><th class=\"num\">fast_2.0</th></tr></thead><tbody>\n");
  for (const auto& s : summary) {
    fmt::format_to(out,
                   "<tr{}><td>{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td>"
                   "<td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td>"
                   "<td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td></tr>\n",
                   s.group == "overall" ? " class=\"overall\"" : "", esc(s.group), s.problems, pct(s.pass_rate),
                   pct(s.faster_than_eager), pct(s.tier3), times(s.geomean_vs_eager, "{:.3f}x"),
                   times(s.geomean_vs_compile, "{:.3f}x"), pct(s.fast_1), pct(s.fast_1_5), pct(s.fast_2));
  }
  fmt::format_to(out, "</tbody></table></div>");
  if (!summary.empty() && !summary.back().numerics.empty())
    fmt::format_to(out, "<p id=\"numerics\">{}</p>", esc(numerics_text(summary.back().numerics)));
  fmt::format_to(out, "</section>\n");
}

void tier_legend(Out out) {
  fmt::format_to(out, "<div class=\"legend\">");
  for (size_t b = 0; b < kTierColour.size(); ++b)
    fmt::format_to(out, "<span><span class=\"sw\" style=\"background:{}\"></span>{}</span>", kTierColour[b],
                   kTierLabel[b]);
  fmt::format_to(out, "</div>\n");
}

// (b) One row per problem: correct ones with a speedup as bars from the 1.0x line (right: faster
// than eager, left: slower), fastest first; then the rest, named by their status.
void speedup_chart(Out out, const std::vector<ResultRecord>& records) {
  fmt::format_to(out, "<section><h2>Speedup vs torch eager, per problem (log scale)</h2>\n");
  if (records.empty()) {
    fmt::format_to(out, "<p class=\"note\">No results.</p></section>\n");
    return;
  }
  // Unsolved problems (no candidate at all) are one row with their count: in a suite run with a
  // few solutions they would otherwise be most of the chart. The table below lists them.
  std::vector<const ResultRecord*> bars, rest;
  int unsolved = 0;
  for (const auto& r : records) {
    if (r.status == "unsolved")
      ++unsolved;
    else
      (r.correct() && drawable(r.score.speedup_vs_eager) ? bars : rest).push_back(&r);
  }
  std::stable_sort(bars.begin(), bars.end(), [](const ResultRecord* a, const ResultRecord* b) {
    return *a->score.speedup_vs_eager > *b->score.speedup_vs_eager;
  });
  double vmin = 1, vmax = 1;
  for (const auto* r : bars) {
    vmin = std::min(vmin, *r->score.speedup_vs_eager);
    vmax = std::max(vmax, *r->score.speedup_vs_eager);
  }
  const double label_w = 300, value_w = 70, top = 24, row = 20;
  const LogAxis x(vmin, vmax, label_w, kWidth - value_w);
  const double height = top + row * static_cast<double>(bars.size() + rest.size() + (unsolved > 0)) + 8;
  fmt::format_to(out, "<svg id=\"speedups\" width=\"{0}\" height=\"{1}\" viewBox=\"0 0 {0} {1}\" role=\"img\">\n",
                 kWidth, height);
  for (double t : x.ticks()) {
    const double px = x(t);
    fmt::format_to(out,
                   "<line x1=\"{0:.1f}\" y1=\"{1}\" x2=\"{0:.1f}\" y2=\"{2:.1f}\" stroke=\"#e6e9ed\"/>"
                   "<text class=\"tick\" x=\"{0:.1f}\" y=\"{3}\" text-anchor=\"middle\">{4:g}x</text>\n",
                   px, top - 4, height - 8, top - 8, t);
  }
  double y = top;
  for (const auto* r : bars) {
    const double s = *r->score.speedup_vs_eager, a = x(1.0), b = x(s);
    const double left = std::min(a, b), w = std::max(std::abs(b - a), 1.0);
    fmt::format_to(out,
                   "<text x=\"{0}\" y=\"{1:.1f}\" text-anchor=\"end\">{2}</text>"
                   "<rect class=\"bar\" x=\"{3:.1f}\" y=\"{4:.1f}\" width=\"{5:.1f}\" height=\"14\" fill=\"{6}\">"
                   "<title>{7}: {8:.3f}x (tier {9})</title></rect>"
                   "<text class=\"val\" x=\"{10}\" y=\"{1:.1f}\" text-anchor=\"end\">{8:.2f}x</text>\n",
                   label_w - 8, y + 14, esc(first_line(r->problem, 44)), left, y + 3, w, kTierColour[bucket(*r)],
                   esc(r->problem), s, r->score.tier, kWidth - 4);
    y += row;
  }
  for (const auto* r : rest) {
    const std::string what = r->correct() ? "correct, no timing" : r->status;
    fmt::format_to(out,
                   "<text x=\"{0}\" y=\"{1:.1f}\" text-anchor=\"end\">{2}</text>"
                   "<text class=\"muted\" x=\"{3:.1f}\" y=\"{1:.1f}\">{4}</text>\n",
                   label_w - 8, y + 14, esc(first_line(r->problem, 44)), label_w + 6, esc(what));
    y += row;
  }
  if (unsolved > 0) {
    fmt::format_to(
        out,
        "<text x=\"{0}\" y=\"{1:.1f}\" text-anchor=\"end\">{2} unsolved</text>"
        "<text class=\"muted\" x=\"{3:.1f}\" y=\"{1:.1f}\">no candidate (listed in the table below)</text>\n",
        label_w - 8, y + 14, unsolved, label_w + 6);
    y += row;
  }
  // The parity line last, so it stays visible over the bars.
  fmt::format_to(out,
                 "<line x1=\"{0:.1f}\" y1=\"{1}\" x2=\"{0:.1f}\" y2=\"{2:.1f}\" stroke=\"#2b3340\" "
                 "stroke-width=\"1.5\"/></svg>\n",
                 x(1.0), top - 4, height - 8);
  tier_legend(out);
  fmt::format_to(out, "</section>\n");
}

// (c) Per level and overall, the share of problems in each tier, as 100% stacked bars.
void tier_chart(Out out, const std::vector<ResultRecord>& records) {
  fmt::format_to(out, "<section><h2>Tier distribution per level</h2>\n");
  if (records.empty()) {
    fmt::format_to(out, "<p class=\"note\">No results.</p></section>\n");
    return;
  }
  std::map<std::string, std::array<int, 4>> by_level;
  std::array<int, 4> overall{};
  for (const auto& r : records) {
    ++by_level[level_of(r)][bucket(r)];  // value-initialized to zeros on first use
    ++overall[bucket(r)];
  }
  std::vector<std::pair<std::string, std::array<int, 4>>> rows(by_level.begin(), by_level.end());
  rows.emplace_back("overall", overall);
  const double label_w = 130, count_w = 110, top = 8, row = 28, axis = 22;
  const double x0 = label_w, x1 = kWidth - count_w, height = top + row * static_cast<double>(rows.size()) + axis;
  fmt::format_to(out, "<svg id=\"tiers\" width=\"{0}\" height=\"{1}\" viewBox=\"0 0 {0} {1}\" role=\"img\">\n", kWidth,
                 height);
  double y = top;
  for (const auto& [group, counts] : rows) {
    int n = 0;
    for (int c : counts) n += c;
    fmt::format_to(out, "<text x=\"{}\" y=\"{:.1f}\" text-anchor=\"end\">{}</text>", label_w - 8, y + 17, esc(group));
    double at = x0;
    for (size_t b = 0; b < counts.size() && n > 0; ++b) {
      if (counts[b] == 0) continue;
      const double w = (x1 - x0) * counts[b] / n;
      fmt::format_to(out,
                     "<rect class=\"seg\" x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"20\" fill=\"{}\">"
                     "<title>{}: {} {} of {}</title></rect>",
                     at, y + 3, w, kTierColour[b], esc(group), counts[b], kTierLabel[b], n);
      if (w >= 24)
        fmt::format_to(out, "<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\" style=\"fill:{}\">{}</text>",
                       at + w / 2, y + 17, b <= 1 ? "#2b3340" : "#fff", counts[b]);
      at += w;
    }
    fmt::format_to(out, "<text class=\"tick\" x=\"{}\" y=\"{:.1f}\">{} problem{}</text>\n", x1 + 8, y + 17, n,
                   n == 1 ? "" : "s");
    y += row;
  }
  for (int q = 0; q <= 4; ++q) {
    const double px = x0 + (x1 - x0) * q / 4;
    fmt::format_to(out,
                   "<line x1=\"{0:.1f}\" y1=\"{1:.1f}\" x2=\"{0:.1f}\" y2=\"{2:.1f}\" stroke=\"#cfd4da\"/>"
                   "<text class=\"tick\" x=\"{0:.1f}\" y=\"{3:.1f}\" text-anchor=\"middle\">{4}%</text>\n",
                   px, y, y + 4, y + 16, q * 25);
  }
  fmt::format_to(out, "</svg>\n");
  tier_legend(out);
  fmt::format_to(out, "</section>\n");
}

// (d) Agent runs: the best speedup vs eager reached by each turn, a step line per problem.
void turn_chart(Out out, const std::vector<ResultRecord>& records) {
  struct Series {
    const ResultRecord* r;
    std::vector<std::pair<int, double>> steps;
  };
  std::vector<Series> series;
  double vmin = 1, vmax = 1;
  // 64-bit: turns are whatever the results file says (2^31-1 - (-2^31) overflows an int).
  int64_t tmin = 0, tmax = 1;
  bool first = true;
  for (const auto& r : records) {
    Series s{&r, {}};
    for (const auto& [turn, v] : r.best_by_turn)
      if (std::isfinite(v) && v > 0) s.steps.emplace_back(turn, v);  // no speedup yet: nothing to draw
    if (s.steps.empty()) continue;
    std::sort(s.steps.begin(), s.steps.end());
    for (const auto& [turn, v] : s.steps) {
      vmin = std::min(vmin, v);
      vmax = std::max(vmax, v);
      tmin = first ? turn : std::min<int64_t>(tmin, turn);
      tmax = first ? turn : std::max<int64_t>(tmax, turn);
      first = false;
    }
    series.push_back(std::move(s));
  }
  if (series.empty()) return;
  if (tmax <= tmin) tmax = tmin + 1;
  const double left = 56, right = kWidth - 16, top = 12, height = 340, bottom = height - 34;
  const LogAxis y(vmin, vmax, bottom, top);
  auto x = [&](int64_t t) { return left + (right - left) * (t - tmin) / static_cast<double>(tmax - tmin); };
  fmt::format_to(out, "<section><h2>Best speedup vs eager by turn (agent runs, log scale)</h2>\n");
  fmt::format_to(out, "<svg id=\"turns\" width=\"{0}\" height=\"{1}\" viewBox=\"0 0 {0} {1}\" role=\"img\">\n", kWidth,
                 height);
  for (double t : y.ticks())
    fmt::format_to(out,
                   "<line x1=\"{0}\" y1=\"{1:.1f}\" x2=\"{2}\" y2=\"{1:.1f}\" stroke=\"{3}\"{4}/>"
                   "<text class=\"tick\" x=\"{5}\" y=\"{6:.1f}\" text-anchor=\"end\">{7:g}x</text>\n",
                   left, y(t), right, t == 1.0 ? "#2b3340" : "#e6e9ed", t == 1.0 ? " stroke-dasharray=\"4 3\"" : "",
                   left - 6, y(t) + 4, t);
  const int64_t span = tmax - tmin, step = std::max<int64_t>(1, (span + 11) / 12);  // at most about 12 turn labels
  for (int64_t t = tmin; t <= tmax; t += step)
    fmt::format_to(out, "<text class=\"tick\" x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\">{}</text>\n", x(t),
                   bottom + 16, t);
  fmt::format_to(out, "<text class=\"tick\" x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\">turn</text>\n",
                 (left + right) / 2, bottom + 31);
  for (size_t i = 0; i < series.size(); ++i) {
    const auto& s = series[i];
    const char* colour = kLineColour[i % kLineColour.size()];
    std::string d = fmt::format("M{:.1f} {:.1f}", x(s.steps[0].first), y(s.steps[0].second));
    for (size_t k = 1; k < s.steps.size(); ++k)
      d += fmt::format("H{:.1f}V{:.1f}", x(s.steps[k].first), y(s.steps[k].second));
    fmt::format_to(out,
                   "<path class=\"step\" d=\"{}\" fill=\"none\" stroke=\"{}\" stroke-width=\"1.8\">"
                   "<title>{}</title></path>",
                   d, colour, esc(s.r->problem));
    for (const auto& [turn, v] : s.steps)
      fmt::format_to(out, "<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"2.5\" fill=\"{}\"/>", x(turn), y(v), colour);
    fmt::format_to(out, "\n");
  }
  fmt::format_to(out, "</svg>\n<div class=\"legend\">");
  for (size_t i = 0; i < series.size(); ++i)
    fmt::format_to(out, "<span><span class=\"sw\" style=\"background:{}\"></span>{}</span>",
                   kLineColour[i % kLineColour.size()], esc(series[i].r->problem));
  fmt::format_to(out, "</div></section>\n");
}

std::string status_class(const std::string& status) {
  // Only the known names become class names: an unknown status must not reach the page unescaped.
  return fmt::format("st-{}", status_name(parse_status(status)));
}

// (e) Every problem with its measurements and the first line of its error.
void problem_table(Out out, const std::vector<ResultRecord>& records) {
  fmt::format_to(out,
                 "<section><h2>Problems</h2><div class=\"scroll\"><table id=\"problems\"><thead><tr>"
                 "<th>problem</th><th>status</th><th class=\"num\">tier</th><th class=\"num\">candidate ms</th>"
                 "<th class=\"num\">eager ms</th><th class=\"num\">compile ms</th><th class=\"num\">vs eager</th>"
                 "<th class=\"num\">vs compile</th><th>error</th></tr></thead><tbody>\n");
  auto ms = [](const std::optional<double>& v) { return times(v, "{:.4f}"); };
  for (const auto& r : records)
    fmt::format_to(out,
                   "<tr><td class=\"name\">{}</td><td><span class=\"st {}\">{}</span></td><td class=\"num\">{}</td>"
                   "<td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td>"
                   "<td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"err\" title=\"{}\">{}</td></tr>\n",
                   esc(r.problem), status_class(r.status), esc(r.status),
                   r.score.tier >= 1 ? std::to_string(r.score.tier) : std::string("-"), ms(r.score.candidate_ms),
                   ms(r.score.eager_ms), ms(r.score.compile_ms), times(r.score.speedup_vs_eager, "{:.3f}x"),
                   times(r.score.speedup_vs_compile, "{:.3f}x"), xml_escape(first_line(r.error, 1000), true),
                   esc(first_line(r.error, 160)));
  if (records.empty()) fmt::format_to(out, "<tr><td colspan=\"9\" class=\"note\">No results.</td></tr>\n");
  fmt::format_to(out, "</tbody></table></div></section>\n");
}

}  // namespace

std::string render_html(const std::vector<ResultRecord>& records, const std::vector<Summary>& summary,
                        const std::string& title) {
  int correct = 0;
  for (const auto& r : records) correct += r.correct();
  std::string html;
  auto out = std::back_inserter(html);
  fmt::format_to(out,
                 "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
                 "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
                 "<title>{0}</title><style>{1}</style></head>\n<body><main>\n<h1>{0}</h1>\n"
                 "<p class=\"meta\">{2} problem{3}, {4} correct &middot; kagent {5}</p>\n",
                 esc(title), kStyle, records.size(), records.size() == 1 ? "" : "s", correct, KAGENT_VERSION);
  summary_table(out, summary);
  speedup_chart(out, records);
  tier_chart(out, records);
  turn_chart(out, records);
  problem_table(out, records);
  fmt::format_to(out, "</main></body></html>\n");
  return html;
}

}  // namespace kagent::report
