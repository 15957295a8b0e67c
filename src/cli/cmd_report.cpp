// kagent report FILE...: merges results files (shards, resumed runs) and prints the summary per
// level and overall (pass rate, faster than eager, tier 3, geometric-mean speedups, fast_p).
// --html writes a self-contained page with charts, --junit a JUnit XML file for CI test reports;
// the summary is still printed. Exit 0, 2 for unreadable input, 3 when an output cannot be written.
#include <memory>

#include <fmt/format.h>

#include "commands.hpp"
#include "kagent/report/html.hpp"
#include "kagent/report/junit.hpp"
#include "kagent/report/results.hpp"

namespace kagent::cli {

Command add_report_command(CLI::App& app) {
  struct Args {
    std::vector<std::string> files;
    bool md = false, json = false;
    std::string html, junit;
  };
  auto a = std::make_shared<Args>();
  CLI::App* sub = app.add_subcommand("report", "Summarize results.jsonl files: pass rate, speedups, fast_p per level");
  sub->add_option("files", a->files, "results.jsonl files (shards are merged)")->required()->check(CLI::ExistingFile);
  sub->add_flag("--md", a->md, "Print a Markdown table");
  sub->add_flag("--json", a->json, "Print JSON");
  sub->add_option("--html", a->html, "Also write a self-contained HTML report (tables and charts) to this file");
  sub->add_option("--junit", a->junit, "Also write JUnit XML (one test case per problem) to this file");
  return {sub, [a]() {
            std::vector<std::filesystem::path> files(a->files.begin(), a->files.end());
            auto records = report::read_results(files);
            auto summary = report::summarize(records);
            if (a->json) {
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
