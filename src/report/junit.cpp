#include "kagent/report/junit.hpp"

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <optional>

#include <fmt/format.h>

#include "kagent/common/utf8.hpp"

namespace kagent::report {

namespace {

constexpr std::string_view kReplacement = "\xEF\xBF\xBD";  // U+FFFD in UTF-8

// The length of the UTF-8 sequence at s[i]: positive for a character XML 1.0 allows, negative
// for a complete sequence naming one it does not (a surrogate, U+FFFE, U+FFFF: one U+FFFD for the
// whole sequence), 0 for a byte that starts no sequence.
int utf8_length(std::string_view s, size_t i) {
  const auto c = static_cast<unsigned char>(s[i]);
  int len = 0;
  uint32_t cp = 0, min = 0;
  if (c >= 0xC2 && c <= 0xDF) {
    len = 2, cp = c & 0x1F, min = 0x80;
  } else if (c >= 0xE0 && c <= 0xEF) {
    len = 3, cp = c & 0x0F, min = 0x800;
  } else if (c >= 0xF0 && c <= 0xF4) {
    len = 4, cp = c & 0x07, min = 0x10000;
  } else {
    return 0;  // a continuation byte out of place, or a lead byte UTF-8 never uses
  }
  if (i + static_cast<size_t>(len) > s.size()) return 0;
  for (int k = 1; k < len; ++k) {
    const auto b = static_cast<unsigned char>(s[i + static_cast<size_t>(k)]);
    if ((b & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (b & 0x3F);
  }
  if (cp < min) return 0;  // overlong: the lead byte alone is replaced, as for any bad byte
  const bool ok = cp <= 0x10FFFF && !(cp >= 0xD800 && cp <= 0xDFFF) && cp != 0xFFFE && cp != 0xFFFF;
  return ok ? len : -len;
}

std::optional<double> finite(const std::optional<double>& v) {
  return v && std::isfinite(*v) ? v : std::nullopt;
}

std::string ms(const std::optional<double>& v) {
  return finite(v) ? fmt::format("{:.4f} ms", *v) : std::string("-");
}

std::string times(const std::optional<double>& v) {
  return finite(v) ? fmt::format("{:.3f}x", *v) : std::string("-");
}

// The measurements, for <system-out> or a failure's body.
std::string numbers(const ResultRecord& r) {
  std::string out = fmt::format("status: {}\ntier: {}\n", r.status, r.score.tier);
  out += fmt::format("candidate: {}\neager: {}\ncompile: {}\n", ms(r.score.candidate_ms), ms(r.score.eager_ms),
                     ms(r.score.compile_ms));
  out += fmt::format("speedup vs eager: {}\nspeedup vs compile: {}\n", times(r.score.speedup_vs_eager),
                     times(r.score.speedup_vs_compile));
  if (!r.candidate.empty()) out += fmt::format("candidate file: {}\n", r.candidate);
  if (!r.run_dir.empty()) out += fmt::format("run dir: {}\n", r.run_dir);
  if (r.gpu) out += fmt::format("gpu: {}\n", *r.gpu);
  if (!r.score.precision.empty()) out += fmt::format("precision: {}\n", r.score.precision);
  if (r.score.tolerance) out += fmt::format("tolerance: {}\n", tolerance_text(*r.score.tolerance));
  return out;
}

// What correctness was judged under, as testcase properties (as pytest's record_property writes
// them), so a CI report can tell runs scored under different tolerances apart.
std::string properties(const ResultRecord& r) {
  std::string p;
  if (!r.score.precision.empty())
    p += fmt::format("        <property name=\"precision\" value=\"{}\"/>\n", xml_escape(r.score.precision, true));
  if (const auto& t = r.score.tolerance) {
    p += fmt::format("        <property name=\"atol\" value=\"{}\"/>\n", t->atol);
    p += fmt::format("        <property name=\"rtol\" value=\"{}\"/>\n", t->rtol);
  }
  return p.empty() ? p : "      <properties>\n" + p + "      </properties>\n";
}

double seconds(const ResultRecord& r) {
  return r.wall_s && std::isfinite(*r.wall_s) && *r.wall_s > 0 ? *r.wall_s : 0.0;
}

enum class Outcome { pass, failure, error, skipped };

Outcome outcome(const std::string& status) {
  const Status s = parse_status(status);
  if (s == Status::correct) return Outcome::pass;
  if (candidate_failure(s)) return Outcome::failure;  // crash too: the candidate's run died
  if (s == Status::unsolved) return Outcome::skipped;
  return Outcome::error;  // "error", and any status this version does not know
}

}  // namespace

std::string xml_escape(std::string_view text, bool attribute) {
  std::string out;
  out.reserve(text.size() + text.size() / 8);
  for (size_t i = 0; i < text.size();) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c >= 0x80) {
      const int len = utf8_length(text, i);
      if (len > 0) out.append(text.substr(i, static_cast<size_t>(len)));
      if (len <= 0) out += kReplacement;
      i += len == 0 ? 1 : static_cast<size_t>(std::abs(len));
      continue;
    }
    ++i;
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;  // also keeps "]]>" out of text content
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;  // &apos; is not HTML 4
      case '\t':
      case '\n':
      case '\r':
        if (attribute) {
          out += fmt::format("&#{};", static_cast<int>(c));
        } else {
          out += static_cast<char>(c);
        }
        break;
      default:
        if (c < 0x20) {
          out += kReplacement;
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  return out;
}

std::string render_junit(const std::vector<ResultRecord>& records, const std::string& suite_name) {
  int failures = 0, errors = 0, skipped = 0;
  double total = 0;
  std::string cases;
  for (const auto& r : records) {
    total += seconds(r);
    const std::string level = r.level.empty() ? "(no level)" : r.level;
    cases += fmt::format("    <testcase classname=\"{}\" name=\"{}\" time=\"{:.3f}\">\n", xml_escape(level, true),
                         xml_escape(r.problem, true), seconds(r));
    cases += properties(r);
    const std::string message = r.error.empty() ? r.status : r.status + ": " + first_line(r.error, 300);
    const std::string body = numbers(r) + (r.error.empty() ? "" : "\n" + r.error + "\n");
    switch (outcome(r.status)) {
      case Outcome::pass:
        cases += fmt::format("      <system-out>{}</system-out>\n", xml_escape(numbers(r)));
        break;
      case Outcome::failure:
        ++failures;
        cases += fmt::format("      <failure message=\"{}\" type=\"{}\">{}</failure>\n", xml_escape(message, true),
                             xml_escape(r.status, true), xml_escape(body));
        break;
      case Outcome::error:
        ++errors;
        cases += fmt::format("      <error message=\"{}\" type=\"{}\">{}</error>\n", xml_escape(message, true),
                             xml_escape(r.status, true), xml_escape(body));
        break;
      case Outcome::skipped:
        ++skipped;
        cases += "      <skipped message=\"no solution\"/>\n";
        break;
    }
    cases += "    </testcase>\n";
  }
  const std::string counts = fmt::format("tests=\"{}\" failures=\"{}\" errors=\"{}\" skipped=\"{}\" time=\"{:.3f}\"",
                                         records.size(), failures, errors, skipped, total);
  const std::string name = xml_escape(suite_name, true);
  return fmt::format(
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"{0}\" {1}>\n  <testsuite name=\"{0}\" "
      "{1}>\n{2}  </testsuite>\n</testsuites>\n",
      name, counts, cases);
}

}  // namespace kagent::report
