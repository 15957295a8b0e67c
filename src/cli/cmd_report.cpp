// kagent report FILE...: merges results files (shards, resumed runs) and prints the summary per
// level and overall (pass rate, faster than eager, tier 3, geometric-mean speedups, fast_p).
// HTML and JUnit output come with `kagent bench` (issue 7). Exit 0, or 2 for unreadable input.
#include <memory>

#include <fmt/format.h>

#include "commands.hpp"
#include "kagent/report/results.hpp"

namespace kagent::cli {

Command add_report_command(CLI::App& app) {
  struct Args {
    std::vector<std::string> files;
    bool md = false, json = false;
  };
  auto a = std::make_shared<Args>();
  CLI::App* sub = app.add_subcommand("report", "Summarize results.jsonl files: pass rate, speedups, fast_p per level");
  sub->add_option("files", a->files, "results.jsonl files (shards are merged)")->required()->check(CLI::ExistingFile);
  sub->add_flag("--md", a->md, "Print a Markdown table");
  sub->add_flag("--json", a->json, "Print JSON");
  return {sub, [a]() {
            std::vector<std::filesystem::path> files(a->files.begin(), a->files.end());
            auto records = report::read_results(files);
            auto summary = report::summarize(records);
            if (a->json) {
              nlohmann::json j = nlohmann::json::array();
              for (const auto& s : summary) {
                auto opt = [](const std::optional<double>& v) { return v ? nlohmann::json(*v) : nlohmann::json(); };
                j.push_back({{"group", s.group},
                             {"problems", s.problems},
                             {"pass_rate", s.pass_rate},
                             {"faster_than_eager", s.faster_than_eager},
                             {"tier3", s.tier3},
                             {"geomean_vs_eager", opt(s.geomean_vs_eager)},
                             {"geomean_vs_compile", opt(s.geomean_vs_compile)},
                             {"fast_1.0", s.fast_1},
                             {"fast_1.5", s.fast_1_5},
                             {"fast_2.0", s.fast_2}});
              }
              print_json(j);
            } else {
              fmt::print("{} problems from {} file(s)\n{}", records.size(), files.size(),
                         report::render_summary(summary, a->md));
            }
            return 0;
          }};
}

}  // namespace kagent::cli
