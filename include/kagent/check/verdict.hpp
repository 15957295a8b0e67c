#pragma once
// One check entry's verdict from its evaluation: pass, or fail with every reason and the numbers
// behind it; and the ways a CI system reads verdicts (JUnit XML, GitHub annotations, a Markdown
// summary). Pure functions: tested without a GPU.
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "kagent/check/manifest.hpp"
#include "kagent/common/score.hpp"
#include "kagent/eval/evaluator.hpp"

namespace kagent::check {

// A compiler message located in a file ("k.cu(17): error: ..." or a plan error "k.cu:3:5: ...").
struct Diagnostic {
  std::string file;
  int line = 0;
  std::string severity;  // "error" or "warning"
  std::string message;
};
std::vector<Diagnostic> parse_diagnostics(const std::string& log);

struct Verdict {
  CheckEntry entry;
  std::string status;                // "pass", "fail", or "unchecked" (no GPU or reference environment)
  std::vector<std::string> reasons;  // why it failed (or could not be checked); notes for a pass
  // The evaluation's flags that do not fail the entry (a degenerate or weak reference, the memory
  // floor, a CUPTI disagreement the timing still covers), as flag_text prints them. A flag that
  // says the timing is not the kernel's (untrusts_timing) fails it instead, in reasons.
  std::vector<std::string> warnings;
  std::vector<Diagnostic> diagnostics;
  std::string compile_log;
  // The evaluation's result (tier, times, speedups, the GPU, the stop rule and flags) and what
  // correctness was judged under (precision empty: the op did not load).
  Score score;
  std::optional<AbComparison> ab;
  std::string baseline_note;  // where the baseline came from, or why there is none
  double wall_s = 0;
  int gpu = 0;
  bool passed() const { return status == "pass"; }
};

// The verdict on an evaluation (with the baseline comparison when the entry has a baseline).
Verdict judge(const CheckEntry& e, const EvalReport& r);
// An entry whose kernel could not even be parsed (its plan header): a failure with the message.
Verdict unparsable(const CheckEntry& e, const std::string& message);
// An entry that could not be checked here (no GPU, no torch): neither pass nor fail.
Verdict unchecked(const CheckEntry& e, const std::string& why);

nlohmann::json verdict_json(const Verdict& v);
std::string render_table(const std::vector<Verdict>& vs);
std::string render_junit(const std::vector<Verdict>& vs);
std::string render_markdown(const std::vector<Verdict>& vs);

// GitHub workflow commands: `::error file=F,line=L,title=T::message`, one per compile
// diagnostic (in the kernel's lines) and one per failure (on the manifest entry, else the kernel).
// Paths relative to `root` (the workspace) when inside it.
std::string render_github(const std::vector<Verdict>& vs, const std::filesystem::path& manifest,
                          const std::filesystem::path& root);
// The escapes GitHub's workflow commands need: % \r \n in data; also : and , in properties.
std::string github_escape_data(std::string_view s);
std::string github_escape_property(std::string_view s);

}  // namespace kagent::check
