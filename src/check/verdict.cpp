#include "kagent/check/verdict.hpp"

#include <algorithm>
#include <regex>

#include <fmt/format.h>

#include "kagent/common/text_table.hpp"
#include "kagent/common/utf8.hpp"
#include "kagent/eval/report_score.hpp"
#include "kagent/report/junit.hpp"

namespace kagent::check {

namespace {

std::string x(const std::optional<double>& v, const char* f = "{:.3f}x") {
  return v ? fmt::format(fmt::runtime(f), *v) : std::string("-");
}

std::string pct(double ratio) {
  return fmt::format("{:+.2f}%", 100 * (ratio - 1));
}

// "+10.21% (95% CI +10.05% to +10.40%, 120 pairs)"
std::string ab_text(const AbComparison& ab) {
  return fmt::format("{} ({}: 95% CI {} to {}, {} alternating pairs)", pct(ab.ratio.median),
                     ab.ratio.median >= 1 ? "slower" : "faster", pct(ab.ratio.low), pct(ab.ratio.high), ab.ratio.n);
}

Verdict base_verdict(const CheckEntry& e) {
  Verdict v;
  v.entry = e;
  return v;
}

}  // namespace

std::vector<Diagnostic> parse_diagnostics(const std::string& log) {
  static const std::regex nvrtc(R"(^(.+)\((\d+)\): (error|warning)[^:]*: (.*)$)");
  static const std::regex plan(R"(^(.+\.cu):(\d+)(?::\d+)?: (.*)$)");
  std::vector<Diagnostic> out;
  size_t pos = 0;
  while (pos < log.size()) {
    size_t end = log.find('\n', pos);
    std::string line = log.substr(pos, end == std::string::npos ? std::string::npos : end - pos);
    pos = end == std::string::npos ? log.size() : end + 1;
    std::smatch m;
    if (std::regex_match(line, m, nvrtc))
      out.push_back({m[1], std::stoi(m[2]), m[3], m[4]});
    else if (std::regex_match(line, m, plan))
      out.push_back({m[1], std::stoi(m[2]), "error", m[3]});
  }
  return out;
}

Verdict judge(const CheckEntry& e, const EvalReport& r) {
  Verdict v = base_verdict(e);
  v.score = report_score(r);
  v.ab = r.outcome.ab;
  if (!r.compile.ok) {
    v.status = "fail";
    v.compile_log = r.compile.log;
    v.diagnostics = parse_diagnostics(r.compile.log);
    v.reasons.push_back(fmt::format("does not compile ({} error(s))",
                                    std::count_if(v.diagnostics.begin(), v.diagnostics.end(),
                                                  [](const Diagnostic& d) { return d.severity == "error"; })));
    return v;
  }
  for (const auto& f : r.outcome.flags)
    if (!untrusts_timing(f)) v.warnings.push_back(flag_text(f));
  if (!r.outcome.correct) {
    v.status = "fail";
    std::string why = r.outcome.failure_stage == FailureStage::none
                          ? std::string("incorrect")
                          : fmt::format("incorrect ({})", failure_stage_name(r.outcome.failure_stage));
    if (r.outcome.mismatch) {
      const auto& m = *r.outcome.mismatch;
      why += fmt::format(": {} differs in {} of {} elements, first at index {} ({} vs reference {}), {}", m.tensor,
                         m.count, m.numel, m.first_index, m.candidate_value, m.reference_value, m.when);
    } else if (!r.outcome.message.empty()) {
      why += ": " + first_line(r.outcome.message, 300);
    }
    v.reasons.push_back(why);
    return v;
  }
  bool failed = false;
  const Flag* untrusted = untrusted_timing(r.outcome.flags);
  if (untrusted) {
    // No speedup stands on such a time (the reward withholds them): this is the reason, not them.
    failed = true;
    v.reasons.push_back(fmt::format("its timing is not trusted: {}", flag_text(*untrusted)));
  } else if (e.t.min_speedup) {
    const bool vs_compile = e.t.against() == "compile";
    const auto& s = vs_compile ? v.score.speedup_vs_compile : v.score.speedup_vs_eager;
    if (!s) {
      failed = true;
      v.reasons.push_back(fmt::format("no {} baseline to compare with (required: {:.3f}x)",
                                      vs_compile ? "torch.compile" : "eager", *e.t.min_speedup) +
                          (vs_compile ? "; a native op needs compile_baseline_ms, or use vs eager" : ""));
    } else if (*s < *e.t.min_speedup) {
      failed = true;
      v.reasons.push_back(fmt::format("{:.3f}x vs {}, below the required {:.3f}x ({:.4f} ms vs {:.4f} ms)", *s,
                                      e.t.against(), *e.t.min_speedup, v.score.candidate_ms.value_or(0),
                                      (vs_compile ? v.score.compile_ms : v.score.eager_ms).value_or(0)));
    }
  }
  if (e.t.has_baseline()) {
    const double margin = e.t.regression_margin();
    if (!r.baseline_error.empty()) {
      failed = true;
      v.reasons.push_back("the baseline kernel does not compile: " + first_line(r.baseline_error, 300));
    } else if (!v.ab) {
      failed = true;
      v.reasons.push_back("no comparison with the baseline was made (timing off?)");
    } else if (!v.ab->baseline_correct) {
      v.reasons.push_back("not compared: the baseline's outputs do not match the reference (" + v.ab->baseline_message +
                          ")");
    } else if (v.ab->ratio.low > 1 + margin / 100) {
      failed = true;
      v.reasons.push_back(fmt::format("regression: {} than the baseline; allowed: {:.1f}%", ab_text(*v.ab), margin));
    } else {
      v.reasons.push_back(fmt::format("vs baseline: {}; allowed regression {:.1f}%", ab_text(*v.ab), margin));
    }
  }
  v.status = failed ? "fail" : "pass";
  return v;
}

Verdict unparsable(const CheckEntry& e, const std::string& message) {
  Verdict v = base_verdict(e);
  v.status = "fail";
  v.compile_log = message;
  v.diagnostics = parse_diagnostics(message);
  v.reasons.push_back("the kernel's launch plan is invalid: " + first_line(message, 300));
  return v;
}

Verdict unchecked(const CheckEntry& e, const std::string& why) {
  Verdict v = base_verdict(e);
  v.status = "unchecked";
  v.reasons.push_back(why);
  return v;
}

nlohmann::json verdict_json(const Verdict& v) {
  auto opt = [](const std::optional<double>& d) { return d ? nlohmann::json(*d) : nlohmann::json(); };
  // The score's keys (score.hpp) beside the check's own.
  nlohmann::json j = v.score;
  j.update({{"name", v.entry.name},
            {"op", v.entry.op.string()},
            {"kernel", v.entry.kernel.string()},
            {"status", v.status},
            {"reasons", v.reasons},
            {"wall_s", v.wall_s},
            {"gpu", v.gpu},
            {"thresholds",
             {{"min_speedup", opt(v.entry.t.min_speedup)},
              {"vs", v.entry.t.against()},
              {"max_regression_pct",
               v.entry.t.has_baseline() ? nlohmann::json(v.entry.t.regression_margin()) : nlohmann::json()}}}});
  // A verdict has always named both, null when the op did not load.
  if (!j.contains("precision")) j["precision"] = nullptr;
  if (!j.contains("tolerance")) j["tolerance"] = {{"atol", nullptr}, {"rtol", nullptr}};
  if (v.ab) j["baseline"] = *v.ab;
  if (!v.warnings.empty()) j["warnings"] = v.warnings;
  if (!v.baseline_note.empty()) j["baseline_note"] = v.baseline_note;
  if (!v.compile_log.empty()) j["compile_log"] = v.compile_log;
  return j;
}

std::string render_table(const std::vector<Verdict>& vs) {
  TextTable t({"check", "verdict", "tier", "ms", "vs eager", "vs compile", "vs baseline", "95% CI"});
  for (const auto& v : vs)
    t.add_row({v.entry.name, v.status, v.score.tier > 0 ? std::to_string(v.score.tier) : "-",
               x(v.score.candidate_ms, "{:.4f}"), x(v.score.speedup_vs_eager), x(v.score.speedup_vs_compile),
               v.ab ? pct(v.ab->ratio.median) : "-",
               v.ab ? fmt::format("{} to {}", pct(v.ab->ratio.low), pct(v.ab->ratio.high)) : "-"});
  std::string out = t.render();
  // The entries not checked for one reason (no GPU) are named together under it, once.
  std::vector<std::pair<std::string, std::string>> unchecked;  // reason, names
  for (const auto& v : vs)
    if (v.status == "unchecked" && !v.reasons.empty()) {
      auto it =
          std::find_if(unchecked.begin(), unchecked.end(), [&](const auto& u) { return u.first == v.reasons[0]; });
      if (it == unchecked.end())
        unchecked.emplace_back(v.reasons[0], v.entry.name);
      else
        it->second += ", " + v.entry.name;
    }
  for (const auto& [reason, names] : unchecked) out += fmt::format("unchecked {}: {}\n", names, reason);
  for (const auto& v : vs) {
    for (size_t i = 0; i < v.reasons.size(); ++i)
      if (!(v.status == "unchecked" && i == 0))
        out += fmt::format("{} {}: {}\n", v.passed() ? "note" : v.status, v.entry.name, v.reasons[i]);
    for (const auto& w : v.warnings) out += fmt::format("warning {}: {}\n", v.entry.name, w);
    if (!v.baseline_note.empty()) out += fmt::format("note {}: baseline: {}\n", v.entry.name, v.baseline_note);
    if (!v.compile_log.empty()) out += v.compile_log + (v.compile_log.ends_with('\n') ? "" : "\n");
  }
  return out;
}

std::string render_junit(const std::vector<Verdict>& vs) {
  using report::xml_escape;
  int failures = 0, skipped = 0;
  double time = 0;
  for (const auto& v : vs) {
    failures += v.status == "fail";
    skipped += v.status == "unchecked";
    time += v.wall_s;
  }
  std::string out = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  out += fmt::format(
      "<testsuites name=\"kagent check\" tests=\"{0}\" failures=\"{1}\" errors=\"0\" skipped=\"{2}\" "
      "time=\"{3:.3f}\">\n"
      "  <testsuite name=\"kagent check\" tests=\"{0}\" failures=\"{1}\" errors=\"0\" skipped=\"{2}\" "
      "time=\"{3:.3f}\">\n",
      vs.size(), failures, skipped, time);
  for (const auto& v : vs) {
    out += fmt::format("    <testcase classname=\"{}\" name=\"{}\" file=\"{}\" time=\"{:.3f}\">\n",
                       xml_escape(v.entry.op.stem().string() == "op" ? v.entry.op.parent_path().filename().string()
                                                                     : v.entry.op.stem().string(),
                                  true),
                       xml_escape(v.entry.name, true), xml_escape(v.entry.kernel.string(), true), v.wall_s);
    if (const auto& tol = v.score.tolerance)
      out += fmt::format(
          "      <properties>\n        <property name=\"precision\" value=\"{}\"/>\n        <property name=\"atol\" "
          "value=\"{}\"/>\n        <property name=\"rtol\" value=\"{}\"/>\n      </properties>\n",
          xml_escape(v.score.precision, true), tol->atol, tol->rtol);
    std::string numbers = fmt::format(
        "kernel {}\nop {}\ntier {}\ncandidate {} ms, eager {} ms, torch.compile {} ms\nspeedup {} vs eager, {} vs "
        "compile\n",
        v.entry.kernel.string(), v.entry.op.string(), v.score.tier, x(v.score.candidate_ms, "{:.4f}"),
        x(v.score.eager_ms, "{:.4f}"), x(v.score.compile_ms, "{:.4f}"), x(v.score.speedup_vs_eager),
        x(v.score.speedup_vs_compile));
    if (v.ab) numbers += "vs baseline " + ab_text(*v.ab) + "\n";
    if (v.score.tolerance)
      numbers += fmt::format("judged under {}, {}\n", v.score.precision, tolerance_text(*v.score.tolerance));
    for (const auto& r : v.reasons) numbers += r + "\n";
    for (const auto& w : v.warnings) numbers += fmt::format("warning: {}\n", w);
    numbers += v.compile_log;
    const std::string message = v.reasons.empty() ? v.status : v.reasons.front();
    if (v.status == "fail")
      out += fmt::format("      <failure message=\"{}\" type=\"check\">{}</failure>\n", xml_escape(message, true),
                         xml_escape(numbers));
    else if (v.status == "unchecked")
      out += fmt::format("      <skipped message=\"{}\"/>\n", xml_escape(message, true));
    out += fmt::format("      <system-out>{}</system-out>\n    </testcase>\n", xml_escape(numbers));
  }
  out += "  </testsuite>\n</testsuites>\n";
  return out;
}

std::string render_markdown(const std::vector<Verdict>& vs) {
  auto cell = [](std::string s) {
    for (size_t p = 0; (p = s.find('|', p)) != std::string::npos; p += 2) s.replace(p, 1, "\\|");
    for (auto& c : s)
      if (c == '\n') c = ' ';
    return s;
  };
  int passed = 0;
  for (const auto& v : vs) passed += v.passed();
  std::string out = fmt::format("### kagent check: {} of {} passed\n\n", passed, vs.size());
  out += "| check | verdict | ms | vs eager | vs compile | vs baseline (95% CI) | reason |\n";
  out += "| --- | --- | ---: | ---: | ---: | ---: | --- |\n";
  for (const auto& v : vs)
    out += fmt::format(
        "| {} | {} | {} | {} | {} | {} | {} |\n", cell(v.entry.name), v.passed() ? "pass" : "**" + v.status + "**",
        x(v.score.candidate_ms, "{:.4f}"), x(v.score.speedup_vs_eager), x(v.score.speedup_vs_compile),
        v.ab ? fmt::format("{} ({} to {})", pct(v.ab->ratio.median), pct(v.ab->ratio.low), pct(v.ab->ratio.high)) : "-",
        cell(v.reasons.empty() ? "" : v.reasons.front()));
  return out;
}

std::string github_escape_data(std::string_view s) {
  std::string out;
  for (char c : s) {
    if (c == '%')
      out += "%25";
    else if (c == '\r')
      out += "%0D";
    else if (c == '\n')
      out += "%0A";
    else
      out += c;
  }
  return out;
}

std::string github_escape_property(std::string_view s) {
  std::string out;
  for (char c : github_escape_data(s)) {
    if (c == ':')
      out += "%3A";
    else if (c == ',')
      out += "%2C";
    else
      out += c;
  }
  return out;
}

std::string render_github(const std::vector<Verdict>& vs, const std::filesystem::path& manifest,
                          const std::filesystem::path& root) {
  namespace fs = std::filesystem;
  auto rel = [&](const fs::path& p) {
    std::error_code ec;
    fs::path a = fs::weakly_canonical(fs::absolute(p), ec);
    fs::path r = fs::weakly_canonical(fs::absolute(root), ec);
    fs::path out = a.lexically_relative(r);
    return out.empty() || out.string().starts_with("..") ? p.string() : out.string();
  };
  std::string out;
  for (const auto& v : vs) {
    const std::string title = github_escape_property("kagent check: " + v.entry.name);
    const bool on_manifest = !manifest.empty() && v.entry.manifest_line > 0;
    const std::string where =
        on_manifest ? fmt::format("file={},line={}", github_escape_property(rel(manifest)), v.entry.manifest_line)
                    : fmt::format("file={}", github_escape_property(rel(v.entry.kernel)));
    // A pass against a weak reference proves less: said on the entry, pass or fail.
    for (const auto& w : v.warnings)
      out += fmt::format("::warning {},title={}::{}\n", where, title, github_escape_data(w));
    if (v.passed()) continue;
    const std::string level = v.status == "fail" ? "error" : "warning";
    for (const auto& d : v.diagnostics) {
      // NVRTC names the file as it was given; annotate the entry's kernel when the name matches it.
      const fs::path file =
          fs::path(d.file).filename() == v.entry.kernel.filename() ? v.entry.kernel : fs::path(d.file);
      out += fmt::format("::{} file={},line={},title={}::{}\n", d.severity == "warning" ? "warning" : "error",
                         github_escape_property(rel(file)), d.line, title, github_escape_data(d.message));
    }
    if (!v.diagnostics.empty() && v.status == "fail" && v.reasons.size() == 1 && !v.compile_log.empty()) continue;
    std::string message;
    for (const auto& r : v.reasons) message += (message.empty() ? "" : "\n") + r;
    out += fmt::format("::{} {},title={}::{}\n", level, where, title, github_escape_data(message));
  }
  return out;
}

}  // namespace kagent::check
