// kagent report FILE...: merges results files (shards, resumed runs) and prints the summary per
// level and overall (pass rate, faster than eager, tier 3, geometric-mean speedups, fast_p).
// --html writes a self-contained page with charts, --junit a JUnit XML file for CI test reports;
// the summary is still printed. Results measured under different settings (GPU, precision and
// tolerance, stopping rule, kagent version) are not summed up together: the command refuses them
// (exit 2, naming each setting) unless --separate, which prints one summary per setting.
// Exit 0, 2 for unreadable or mixed input, 3 when an output cannot be written.
#include <memory>

#include <fmt/format.h>

#include "commands.hpp"
#include "kagent/common/error.hpp"
#include "kagent/report/html.hpp"
#include "kagent/report/junit.hpp"
#include "kagent/report/results.hpp"

namespace kagent::cli {

namespace {

// One summary per measurement setting; results with nothing measured (failed before any timing)
// are counted apart, since they belong to no setting.
void print_separately(const std::vector<report::ResultRecord>& records,
                      const std::vector<std::pair<report::MeasurementSetting, int>>& settings, bool json, bool md) {
  nlohmann::json j = nlohmann::json::array();
  std::vector<report::ResultRecord> unmeasured;
  for (const auto& r : records)
    if (!report::measured(r)) unmeasured.push_back(r);
  for (const auto& [setting, n] : settings) {
    std::vector<report::ResultRecord> part;
    for (const auto& r : records)
      if (report::measured(r) && report::setting_of(r) == setting) part.push_back(r);
    auto summary = report::summarize(part);
    if (json) {
      nlohmann::json s = {{"setting", report::setting_text(setting)}, {"summary", nlohmann::json::array()}};
      for (const auto& x : summary) s["summary"].push_back(x);
      j.push_back(s);
    } else {
      fmt::print("== measured under: {} ({} problems)\n{}\n", report::setting_text(setting), part.size(),
                 report::render_summary(summary, md));
    }
  }
  if (json) {
    j.push_back({{"setting", "nothing measured"}, {"problems", unmeasured.size()}});
    print_json(j);
  } else if (!unmeasured.empty()) {
    fmt::print("== nothing measured ({} problem{}: failed before any timing)\n", unmeasured.size(), unmeasured.size() == 1 ? "" : "s");
  }
}

}  // namespace

Command add_report_command(CLI::App& app) {
  struct Args {
    std::vector<std::string> files;
    bool md = false, json = false, separate = false;
    std::string html, junit;
  };
  auto a = std::make_shared<Args>();
  CLI::App* sub = app.add_subcommand("report", "Summarize results.jsonl files: pass rate, speedups, fast_p per level");
  sub->add_option("files", a->files, "results.jsonl files (shards are merged)")->required()->check(CLI::ExistingFile);
  sub->add_flag("--md", a->md, "Print a Markdown table");
  sub->add_flag("--json", a->json, "Print JSON");
  sub->add_flag("--separate", a->separate,
                "Results measured under different settings (GPU, precision, tolerance, stopping rule, kagent "
                "version): one summary per setting instead of refusing them");
  sub->add_option("--html", a->html, "Also write a self-contained HTML report (tables and charts) to this file");
  sub->add_option("--junit", a->junit, "Also write JUnit XML (one test case per problem) to this file");
  return {sub, [a]() {
            std::vector<std::filesystem::path> files(a->files.begin(), a->files.end());
            auto records = report::read_results(files);
            auto settings = report::measurement_settings(records);
            if (settings.size() > 1) {
              std::string list;
              for (const auto& [s, n] : settings)
                list += fmt::format("\n  {} problem{}: {}", n, n == 1 ? "" : "s", report::setting_text(s));
              if (!a->separate)
                throw InputError(fmt::format("these results were measured under {} different settings, so their "
                                             "speedups and pass rates are not comparable:{}\nReport them one "
                                             "setting at a time, or pass --separate for one summary per setting",
                                             settings.size(), list));
            }
            auto summary = report::summarize(records);
            if (settings.size() > 1) {
              print_separately(records, settings, a->json, a->md);
            } else if (a->json) {
              nlohmann::json j = nlohmann::json::array();
              for (const auto& s : summary) j.push_back(s);
              print_json(j);
            } else {
              fmt::print("{} problems from {} file(s)\n{}", records.size(), files.size(),
                         report::render_summary(summary, a->md));
            }
            // The page title and suite name say which results they show.
            std::string names;
            for (const auto& f : files) names += (names.empty() ? "" : ", ") + f.filename().string();
            if (!a->html.empty())
              write_output_file(a->html, report::render_html(records, summary, "kagent report: " + names),
                                "the HTML report");
            if (!a->junit.empty())
              write_output_file(a->junit, report::render_junit(records, "kagent " + names), "JUnit XML");
            return 0;
          }};
}

}  // namespace kagent::cli
