// kagent check: the CI gate for kernel pull requests. Each entry (a kernel and its operator, from
// the command line or a kagent.json manifest) must compile, pass the full correctness protocol,
// reach --min-speedup against torch.compile (or eager), and, given the previous version
// (--baseline FILE or --baseline-ref GIT_REF), not be slower than it by more than
// --max-regression percent, judged on a confidence interval from alternating A/B samples.
// Exit 0 all pass, 1 any fails, 2 bad input, 3 an entry could not be checked here (no GPU, no
// Python/torch) and none failed.
#include <cstdlib>
#include <fstream>
#include <memory>

#include <fmt/format.h>

#include "commands.hpp"
#include "help_format.hpp"
#include "kagent/check/manifest.hpp"
#include "kagent/check/run.hpp"
#include "kagent/check/verdict.hpp"
#include "kagent/common/error.hpp"
#include "kagent/spec/op.hpp"

namespace kagent::cli {

namespace {

namespace fs = std::filesystem;

struct CheckArgs {
  std::string kernel, op, manifest, baseline, baseline_ref, vs, junit, gpus, arch;
  double min_speedup = -1, max_regression = -1, timeout_s = 120;
  bool github = false, json = false;
  OpOverrides overrides;
  MeasureFlags measure;
};

int run_check(const CheckArgs& a) {
  check::Thresholds flags;
  if (a.min_speedup >= 0) flags.min_speedup = a.min_speedup;
  if (!a.vs.empty()) flags.vs = a.vs;
  if (a.max_regression >= 0) flags.max_regression = a.max_regression;
  if (!a.baseline.empty()) flags.baseline = fs::path(a.baseline);
  if (!a.baseline_ref.empty()) flags.baseline_ref = a.baseline_ref;

  std::vector<check::CheckEntry> entries;
  fs::path manifest;
  if (!a.kernel.empty()) {
    if (!a.manifest.empty()) throw InputError("check: give a kernel with --op, or --manifest, not both");
    if (a.op.empty()) throw InputError("check: " + a.kernel + ": --op is required with a kernel");
    check::CheckEntry e;
    e.name = fs::path(a.kernel).stem().string();
    e.kernel = a.kernel;
    e.op = a.op;
    e.t = flags;
    entries.push_back(e);
  } else {
    manifest = a.manifest.empty() ? fs::path("kagent.json") : fs::path(a.manifest);
    std::error_code ec;
    if (!fs::is_regular_file(manifest, ec))
      throw InputError(a.manifest.empty() ? "check: give a kernel and --op, or --manifest (no kagent.json here)"
                                          : "--manifest " + a.manifest + ": no such file");
    entries = check::load_manifest(manifest, flags).entries;
  }
  // Bad input is found before any GPU work: every op must load, every baseline must be found.
  a.overrides.validate();
  for (const auto& e : entries) {
    try {
      (void)load_op(e.op);
    } catch (const InputError& err) {
      throw InputError(fmt::format("check {}: {}", e.name, err.what()));
    }
  }
  check::resolve_baselines(entries);

  GpuInventory inv = query_gpus();
  check::CheckOptions o;
  o.gpus.clear();
  if (!a.gpus.empty())
    o.gpus = parse_gpus(a.gpus, inv);
  else
    for (const auto& g : inv.gpus) o.gpus.push_back(g.index);
  if (o.gpus.empty()) o.gpus = {0};  // its worker finds no GPU: compile errors still count
  if (o.gpus.size() > entries.size()) o.gpus.resize(entries.size());
  o.eval.arch = a.arch;
  o.overrides = a.overrides;
  o.eval.timeout = std::chrono::milliseconds(static_cast<int64_t>(a.timeout_s * 1000));
  a.measure.apply(o.eval);
  o.cache = std::make_shared<CompileCache>(CompileCache::default_dir());

  const std::string where =
      inv.gpus.empty() && a.gpus.empty()
          ? fmt::format("; no GPU ({}): compile errors still fail, nothing else is checked", inv.problem)
          : fmt::format(" on GPU(s) {}", fmt::join(o.gpus, ","));
  fmt::print(stderr, "kagent check: {} entr{}{}{}\n", entries.size(), entries.size() == 1 ? "y" : "ies",
             manifest.empty() ? "" : " from " + manifest.string(), where);
  std::string said;  // a reason is said once, not again for each entry it holds for
  auto verdicts = check::run_checks(entries, o, [&](const check::Verdict& v) {
    const std::string why = v.reasons.empty() || v.reasons.front() == said ? "" : "; " + v.reasons.front();
    if (!v.reasons.empty()) said = v.reasons.front();
    fmt::print(stderr, "  {:<7} {} ({:.1f} s{})\n", v.status, v.entry.name, v.wall_s, why);
  });

  if (a.json) {
    nlohmann::json j = nlohmann::json::array();
    for (const auto& v : verdicts) j.push_back(check::verdict_json(v));
    print_json(j);
  } else {
    fmt::print("{}", check::render_table(verdicts));
  }
  if (!a.junit.empty()) write_output_file(a.junit, check::render_junit(verdicts), "JUnit XML");
  if (a.github) {
    fmt::print("{}", check::render_github(verdicts, manifest, fs::current_path()));
    if (const char* summary = std::getenv("GITHUB_STEP_SUMMARY"); summary && *summary) {
      std::ofstream f(summary, std::ios::app);
      f << check::render_markdown(verdicts);
      if (!f) throw EnvError(fmt::format("$GITHUB_STEP_SUMMARY {}: cannot append", summary));
    }
  }
  int failed = 0, unchecked = 0;
  for (const auto& v : verdicts) {
    failed += v.status == "fail";
    unchecked += v.status == "unchecked";
  }
  fmt::print(stderr, "kagent check: {} passed, {} failed, {} not checked\n",
             verdicts.size() - static_cast<size_t>(failed + unchecked), failed, unchecked);
  if (failed) return static_cast<int>(ExitCode::failed);
  if (unchecked) return static_cast<int>(ExitCode::environment);
  return 0;
}

}  // namespace

Command add_check_command(CLI::App& app) {
  auto a = std::make_shared<CheckArgs>();
  CLI::App* sub = app.add_subcommand("check", "CI gate: kernels must be correct, fast enough, and not regress");
  set_examples(sub, {
                        {"kagent check --manifest examples/ci/kagent.json --github",
                         "every entry of a manifest, failures as GitHub annotations"},
                        {"kagent check kernel.cu --op op.json --baseline-ref origin/main --min-speedup 1.0",
                         "one kernel: correct, at least as fast as torch.compile, no slower than at origin/main"},
                    });
  sub->add_option("kernel", a->kernel, "Kernel .cu (or ModelNew solution .py) to check (with --op)")
      ->check(CLI::ExistingFile);
  sub->add_option("--op", a->op, "op.json, KernelBench .py, or an id like level1/19 under $KAGENT_KERNELBENCH_DIR")
      ->transform(op_path());
  sub->add_option("--manifest", a->manifest, "kagent.json listing many checks (default: ./kagent.json)");
  sub->add_option("--baseline", a->baseline, "The previous version of the kernel, timed against it A B A B")
      ->check(CLI::ExistingFile);
  sub->add_option("--baseline-ref", a->baseline_ref, "The kernel's file at this git ref is the baseline");
  sub->add_option("--min-speedup", a->min_speedup, "Required speedup vs torch.compile (or --vs eager)")
      ->check(CLI::Range(0.0, 1e6));
  sub->add_option("--vs", a->vs, "What --min-speedup compares with: compile (default) or eager")
      ->check(CLI::IsMember({"compile", "eager"}));
  sub->add_option("--max-regression", a->max_regression,
                  fmt::format("Percent slower than the baseline that fails, judged on the 95% interval (default {})",
                              check::kDefaultMaxRegression))
      ->check(CLI::Range(0.0, 1000.0));
  sub->add_option("--gpus", a->gpus, "GPU indices for the entries, e.g. 0,1 (default: all)");
  sub->add_option("--arch", a->arch, "Compile target (default: the GPU's)");
  sub->add_option("--timeout", a->timeout_s, "Seconds per evaluation on the GPU (default 120)")
      ->check(CLI::Range(1.0, 3600.0));
  sub->add_option("--junit", a->junit, "Write JUnit XML (one test case per entry) to this file");
  sub->add_flag("--github", a->github,
                "Print GitHub Actions annotations; append a Markdown summary to $GITHUB_STEP_SUMMARY");
  sub->add_flag("--json", a->json, "Print the verdicts as JSON");
  add_op_flags(sub, &a->overrides);
  add_measure_flags(sub, &a->measure);
  return {sub, [a]() { return run_check(*a); }};
}

}  // namespace kagent::cli
