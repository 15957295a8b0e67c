// kagent report FILE...: merges results files (shards, resumed runs) and prints the summary per
// level and overall (pass rate, faster than eager, tier 3, geometric-mean speedups, fast_p).
// --html writes a self-contained page with charts, --junit a JUnit XML file for CI test reports;
// the summary is still printed. Results measured under different settings (GPU, precision and
// tolerance, stopping rule, kagent version) are not summed up together: the command refuses them
// (exit 2, naming each setting) unless --separate, which prints one summary per setting.
// Results of several samples per problem (bench --samples) are summarized by each problem's best
// sample, and pass@k, fast_p@k and best-of-k over the samples are printed beside (--k, --fast-p).
// Exit 0, 2 for unreadable or mixed input, 3 when an output cannot be written.
#include <memory>

#include <fmt/format.h>

#include "commands.hpp"
#include "help_format.hpp"
#include "kagent/common/error.hpp"
#include "kagent/report/html.hpp"
#include "kagent/report/junit.hpp"
#include "kagent/report/results.hpp"
#include "kagent/report/sampling.hpp"

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
    fmt::print("== nothing measured ({} problem{}: failed before any timing)\n", unmeasured.size(),
               unmeasured.size() == 1 ? "" : "s");
  }
}

}  // namespace

Command add_report_command(CLI::App& app) {
  struct Args {
    std::vector<std::string> files;
    bool md = false, json = false, separate = false;
    std::string html, junit;
    report::SamplingOptions sampling;
  };
  auto a = std::make_shared<Args>();
  CLI::App* sub = app.add_subcommand("report", "Summarize results.jsonl files: pass rate, speedups, fast_p per level");
  set_examples(sub, {
                        {"kagent report results.jsonl", "pass rate, tiers, speedups and fast_p per level"},
                        {"kagent report results.shard-*.jsonl --html report.html --junit report.xml",
                         "merges a cluster's shards into one page and a CI test report"},
                    });
  sub->add_option("files", a->files, "results.jsonl files (shards are merged)")->required()->check(CLI::ExistingFile);
  sub->add_flag("--md", a->md, "Print a Markdown table");
  sub->add_flag("--json", a->json, "Print JSON");
  sub->add_flag("--separate", a->separate,
                "Results measured under different settings (GPU, precision, tolerance, stopping rule, kagent "
                "version): one summary per setting instead of refusing them");
  sub->add_option("--html", a->html, "Also write a self-contained HTML report (tables and charts) to this file");
  sub->add_option("--junit", a->junit, "Also write JUnit XML (one test case per problem) to this file");
  sub->add_option("--k", a->sampling.ks,
                  "Samples (bench --samples): the k of pass@k, fast_p@k, best-of-k (default 1,5,10)")
      ->delimiter(',')
      ->check(CLI::Range(1, 1000000));
  sub->add_option("--fast-p", a->sampling.ps, "Samples: the thresholds p of fast_p@k, speedups vs eager (default 1.0)")
      ->delimiter(',')
      ->check(CLI::Range(0.0, 1e9));
  return {
      sub, [a]() {
        std::vector<std::filesystem::path> files(a->files.begin(), a->files.end());
        std::vector<report::ResultsFileRead> read;
        auto records = report::read_results(files, &read);
        // A file that holds no record is the wrong file (an empty one, a binary, a log), not a
        // report of zero problems; a torn last line (a run killed mid-write) is said, not hidden.
        for (const auto& f : read) {
          if (f.torn_line > 0)
            fmt::print(stderr,
                       "kagent: warning: {}:{}: the last line has no newline and is not a complete record (a "
                       "write cut off): left out\n",
                       f.file.string(), f.torn_line);
          if (f.records == 0)
            throw InputError(fmt::format(
                "{}: no result record in it ({}): kagent report reads the results.jsonl of kagent bench, or "
                "the records of kagent eval --json",
                f.file.string(),
                f.torn_line > 0 ? "only a last line without its newline that does not parse"
                                : "empty, or blank lines only"));
        }
        // Several samples per problem: the per-problem summary is of each problem's best sample.
        const bool samples = report::has_samples(records);
        const std::vector<report::ResultRecord> all_samples = samples ? records : std::vector<report::ResultRecord>{};
        if (samples) records = report::best_sample_per_problem(all_samples);
        auto settings = report::measurement_settings(records);
        if (settings.size() > 1) {
          std::string list;
          for (const auto& [s, n] : settings)
            list += fmt::format("\n  {} problem{}: {}", n, n == 1 ? "" : "s", report::setting_text(s));
          if (!a->separate)
            throw InputError(
                fmt::format("these results were measured under {} different settings, so their "
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
          if (samples) {  // an object only for samples: the array stays what it was otherwise
            nlohmann::json sampling = nlohmann::json::array();
            for (const auto& s : report::summarize_samples(all_samples, a->sampling)) sampling.push_back(s);
            j = {{"summary", j}, {"sampling", sampling}};
          }
          print_json(j);
        } else {
          fmt::print("{} problem{} from {} file(s){}\n{}", records.size(), records.size() == 1 ? "" : "s", files.size(),
                     samples ? fmt::format(", {} samples (each problem's best below)", all_samples.size()) : "",
                     report::render_summary(summary, a->md));
          if (samples)
            fmt::print("\n{}", report::render_sampling(report::summarize_samples(all_samples, a->sampling), a->md));
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
