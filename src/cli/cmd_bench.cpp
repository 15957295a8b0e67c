// kagent bench PATH...: a whole suite (KernelBench level folders, problem files, folders of
// op.json) through the existing solutions (--solutions DIR), N samples per problem (--samples DIR:
// a record per sample, then pass@k, fast_p@k and best-of-k) or the agent (--agent), one worker per
// GPU, records appended to results.jsonl as each problem finishes; --resume skips what is done,
// --shard I/N (or the Slurm / Kubernetes index in the environment) takes a deterministic share.
// Exit 0 every problem of this shard has a record, 1 interrupted before that (run again with
// --resume), 2 bad input, 3 environment (no GPU for the solutions; workers stopped by repeated
// environment failures).
#include <unistd.h>

#include <csignal>
#include <memory>
#include <set>

#include <fmt/format.h>

#include <spdlog/spdlog.h>
#include "commands.hpp"
#include "help_format.hpp"
#include "kagent/agent/optimize_run.hpp"
#include "kagent/bench/batch.hpp"
#include "kagent/bench/jobs.hpp"
#include "kagent/bench/samples.hpp"
#include "kagent/common/error.hpp"
#include "kagent/gpu/devices.hpp"
#include "kagent/judge/evaluator_backend.hpp"
#include "kagent/llm/config.hpp"
#include "kagent/llm/tool_choice.hpp"
#include "kagent/report/sampling.hpp"
#include "kagent/sandbox/process.hpp"
#include "progress.hpp"

namespace kagent::cli {

namespace {

namespace fs = std::filesystem;

struct BenchArgs {
  std::vector<std::string> paths;
  std::string solutions;
  std::string samples;  // --samples DIR
  bool agent = false;
  std::string gpus, shard, out, filter, runs, arch, precision;
  int jobs = 1;
  int build_jobs = -1;  // --samples: threads building samples ahead (-1: default_prebuild_threads)
  bool resume = false, json = false, list = false, refresh_baselines = false;
  double timeout_s = 0;
  // Passed on to each `kagent optimize` (--agent), in its options.
  llm::LlmFlags llm;
  int turns = 0;
  double minutes = 0;
  int64_t max_tokens = 0;
  bool no_shell = false;
  OpOverrides overrides;  // --atol/--rtol/--tolerance for every problem
  MeasureFlags measure;   // solutions: the stopping rule and knobs (agent runs use the defaults)
};

std::atomic<bool> g_stop{false};

void on_signal(int sig) {
  if (g_stop.exchange(true)) {  // the second one: stop now
    std::signal(sig, SIG_DFL);
    std::raise(sig);
    return;
  }
  const char msg[] = "\nkagent bench: stopping after the problems in progress (again to abort now)\n";
  [[maybe_unused]] auto n = ::write(2, msg, sizeof msg - 1);
}

nlohmann::json summary_array(const std::vector<report::ResultRecord>& records) {
  nlohmann::json j = nlohmann::json::array();
  for (const auto& s : report::summarize(records)) j.push_back(s);
  return j;
}

// A sample's key in the results file (the problem's id alone without samples).
std::string key_of(const bench::Problem& p) {
  return bench::sample_key(p.id, p.sample.empty() ? std::string() : p.sample.filename().string());
}

int run_bench(BenchArgs a) {
  if (static_cast<int>(a.agent) + !a.solutions.empty() + !a.samples.empty() != 1)
    throw InputError(
        "bench: give one of --solutions DIR (evaluate existing kernels), --samples DIR (N samples per problem) "
        "or --agent (run the agent)");
  const bool sampling = !a.samples.empty();
  if (a.agent && (nlohmann::json(a.measure.stop_rule) != nlohmann::json(StopRule{}) ||
                  nlohmann::json(a.measure.knobs) != nlohmann::json(MeasureKnobs{})))
    throw InputError(
        "bench: the measurement flags (--min-samples, --check-every, ...) apply to --solutions; agent "
        "runs time with the defaults");
  // Refused here, once, rather than by every agent child.
  if (!a.llm.tool_choice.empty()) llm::check_tool_choice(a.llm.tool_choice, "flag --tool-choice");
  std::vector<fs::path> paths(a.paths.begin(), a.paths.end());
  std::vector<bench::Problem> all = bench::discover_problems(paths);
  if (!a.filter.empty()) all = bench::filter_problems(all, a.filter);
  std::optional<bench::Shard> shard;
  if (!a.shard.empty())
    shard = bench::parse_shard(a.shard);
  else
    shard = bench::shard_from_env();
  std::vector<bench::Problem> mine = shard ? bench::take_shard(all, *shard) : all;
  // --samples: a work item per sample (a problem's samples stay in this shard).
  std::vector<bench::Problem> items = sampling ? bench::expand_samples(mine, a.samples) : mine;

  if (a.list) {
    if (a.json) {
      nlohmann::json j = nlohmann::json::array();
      for (const auto& p : items) {
        j.push_back({{"problem", p.id}, {"path", p.path.string()}});
        if (sampling) j.back()["sample"] = p.sample.string();
      }
      print_json(j);
    } else {
      for (const auto& p : items)
        fmt::print("{}\t{}{}\n", p.id, p.path.string(), sampling ? "\t" + p.sample.string() : std::string());
    }
    return 0;
  }

  fs::path out =
      a.out.empty()
          ? fs::path(shard ? fmt::format("results.shard-{}-of-{}.jsonl", shard->index, shard->count) : "results.jsonl")
          : fs::path(a.out);
  // What is done already: every record but harness errors ("error"), which a resume retries.
  std::set<std::string> done;
  std::error_code ec;
  if (fs::exists(out, ec) && fs::file_size(out, ec) > 0) {
    if (!a.resume)
      throw InputError(
          fmt::format("{} already holds results: continue it with --resume, or choose another --out", out.string()));
    for (const auto& r : report::read_results({out}))
      if (r.status != "error") done.insert(bench::sample_key(r.problem, r.sample));
  }
  std::vector<bench::Problem> todo;
  int already = 0;
  for (const auto& p : items) (done.count(key_of(p)) ? ++already : (todo.push_back(p), 0));

  // GPUs: --gpus, else every GPU the driver reports.
  GpuInventory inv = query_gpus();
  std::vector<int> gpus;
  if (!a.gpus.empty()) {
    gpus = parse_gpus(a.gpus, inv);
  } else {
    for (const auto& g : inv.gpus) gpus.push_back(g.index);
  }
  int with_solution = 0;
  if (sampling)
    for (const auto& p : todo) with_solution += !p.sample.empty();
  else if (!a.agent)
    for (const auto& p : todo) with_solution += bench::find_solution(a.solutions, p).has_value();
  if (gpus.empty()) {
    // A batch with nothing to evaluate (every problem unsolved) needs no GPU.
    if (!a.agent && with_solution > 0)
      throw EnvError(fmt::format("no GPU to evaluate {} {} on: {}", with_solution,
                                 sampling ? "sample(s)" : "solution(s)",
                                 inv.problem.empty() ? "no CUDA device" : inv.problem));
    gpus = {0};
    if (a.agent) spdlog::warn("no GPU: the agent's evaluations will be unavailable ({})", inv.problem);
  }

  // Settings, printed: every knob that shapes the numbers.
  std::FILE* info = stderr;
  fmt::print(info, "kagent bench: {} problem(s) from {} -> {}\n", all.size(), fmt::join(a.paths, " "), out.string());
  if (shard)
    fmt::print(info, "  shard {}/{} (from {}): {} problem(s)\n", shard->index, shard->count, shard->source,
               mine.size());
  if (already > 0) fmt::print(info, "  resume: {} already recorded, {} to run\n", already, todo.size());
  if (a.agent)
    fmt::print(info, "  agent: kagent optimize per problem, run folders in {}\n",
               (a.runs.empty() ? out.parent_path() / "runs" : fs::path(a.runs)).string());
  else if (sampling)
    fmt::print(info, "  samples: {} ({} sample(s) of {} problem(s) to run)\n", a.samples, with_solution, mine.size());
  else
    fmt::print(info, "  solutions: {} ({} of {} to run have one)\n", a.solutions, with_solution, todo.size());
  std::string gpu_names;
  for (int g : gpus)
    gpu_names += fmt::format(
        "{}{}", gpu_names.empty() ? "" : ", ",
        g < static_cast<int>(inv.gpus.size()) ? fmt::format("{} ({})", g, inv.gpus[g].name) : std::to_string(g));
  if (inv.gpus.empty()) gpu_names += a.agent ? " (no GPU found)" : " (no GPU found: no solution here needs one)";
  fmt::print(info, "  GPUs {} x {} job(s) each{}\n", gpu_names, a.jobs,
             a.jobs > 1 ? " (workers share a GPU: their timings can disturb each other)" : "");

  report::ResultsWriter writer(out);
  bench::BatchOptions bo;
  bo.gpus = gpus;
  bo.jobs_per_gpu = a.jobs;
  bench::JobFactory factory;
  if (a.agent) {
    bench::AgentJobOptions ao;
    ao.runs_dir = fs::absolute(a.runs.empty() ? out.parent_path() / "runs" : fs::path(a.runs));
    ao.kagent = self_dir() + "/kagent";
    ao.timeout = std::chrono::seconds(static_cast<int64_t>(a.timeout_s));
    ao.stop = &g_stop;
    // Every run's options (each problem adds its op, run folder and GPU), handed to each child
    // `kagent optimize` as one JSON document.
    agent::OptimizeRunOptions& ro = ao.options;
    ro.llm = a.llm;
    if (!ro.llm.script.empty()) ro.llm.script = fs::absolute(ro.llm.script).string();
    ro.arch = a.arch;
    ro.precision = a.precision;
    ro.turns = a.turns;
    ro.minutes = a.minutes;
    ro.max_tokens = a.max_tokens;
    ro.no_shell = a.no_shell;
    ro.overrides = a.overrides;
    // What differs from optimize's defaults, said once.
    nlohmann::json given = nlohmann::json::object();
    const nlohmann::json all = ro, defaults = agent::OptimizeRunOptions{};
    for (const auto& [key, value] : all.items()) {
      if (value == defaults[key]) continue;
      given[key] = value.is_object() ? nlohmann::json::object() : value;
      if (value.is_object())  // the llm section: only its keys that were given
        for (const auto& [k, v] : value.items())
          if (v != defaults[key][k]) given[key][k] = v;
    }
    fmt::print(info, "  optimize options: {}\n",
               given.empty() ? "(none: the ops' budgets and the LLM config)" : given.dump());
    factory = [ao](int gpu) { return bench::make_agent_job(ao, gpu); };
  } else if (sampling) {
    // Every sample judged as `kagent eval SAMPLE --op PROBLEM` with these flags, through the judge's
    // backend on each worker's GPU.
    bench::SampleJobOptions so;
    so.samples = a.samples;
    judge::CandidateRequest& rq = so.request;
    rq.arch = a.arch;
    if (!a.precision.empty()) rq.precision = precision_option(a.precision);
    rq.overrides = a.overrides;
    rq.refresh_baselines = a.refresh_baselines;
    rq.timeout = std::chrono::milliseconds(static_cast<int64_t>((a.timeout_s > 0 ? a.timeout_s : 120) * 1000));
    a.measure.validate();
    rq.stop_rule = a.measure.stop_rule;
    rq.knobs = a.measure.knobs;
    rq.torch_ops = a.measure.torch_ops_or_default();
    rq.baselines = a.measure.baselines;
    auto cache = std::make_shared<CompileCache>(CompileCache::default_dir());
    so.backends = judge::evaluator_backends(cache);
    so.prebuilder = make_prebuilder(a.build_jobs, a.arch, gpus.front(), static_cast<int>(gpus.size()) * a.jobs, cache);
    if (so.prebuilder) {
      // Every sample still to judge is queued at once, in the order the workers take them.
      for (const auto& p : todo)
        if (!p.sample.empty()) so.prebuilder->submit(bench::sample_request(so, p));
      fmt::print(info, "  building ahead: {} thread(s) compile and build samples while the GPUs measure\n",
                 so.prebuilder->threads());
      // The workers take the first sample whose build is over.
      bo.ready = [so](const bench::Problem& p) {
        return p.sample.empty() || so.prebuilder->ready(bench::sample_request(so, p));
      };
      bo.wait_for_builds = [pre = so.prebuilder] { pre->wait_for_progress(std::chrono::milliseconds(50)); };
    }
    fmt::print(info, "  evaluation: full protocol per sample, {} s limit each{}\n", rq.timeout.count() / 1000,
               a.refresh_baselines ? ", baselines re-measured" : "");
    factory = [so](int gpu) { return bench::make_sample_job(so, gpu); };
  } else {
    bench::SolutionJobOptions so;
    so.solutions = a.solutions;
    so.overrides = a.overrides;
    so.eval.arch = a.arch;
    if (!a.precision.empty()) so.precision = precision_option(a.precision);
    so.eval.refresh_baselines = a.refresh_baselines;
    so.eval.timeout = std::chrono::milliseconds(static_cast<int64_t>((a.timeout_s > 0 ? a.timeout_s : 120) * 1000));
    a.measure.apply(so.eval);
    so.cache = std::make_shared<CompileCache>(CompileCache::default_dir());
    fmt::print(info, "  evaluation: full protocol (the ops' correctness trials, timing), {} s limit each{}{}\n",
               so.eval.timeout.count() / 1000, a.refresh_baselines ? ", baselines re-measured" : "",
               a.overrides.empty() ? std::string()
                                   : fmt::format(", tolerance{}{} for every problem",
                                                 a.overrides.atol ? fmt::format(" atol {:g}", *a.overrides.atol) : "",
                                                 a.overrides.rtol ? fmt::format(" rtol {:g}", *a.overrides.rtol) : ""));
    factory = [so](int gpu) { return bench::make_solution_job(so, gpu); };
  }

  BatchProgress progress(static_cast<int>(items.size()), already, !a.json && ::isatty(2), stderr);
  bench::BatchEvents events;
  events.started = [&](const bench::Problem& p, int gpu) {
    progress.started(p.sample.empty() ? p.id : p.id + "/" + p.sample.filename().string(), gpu);
  };
  events.finished = [&](const report::ResultRecord& r) {
    writer.append(r);
    progress.finished(r);
    if (a.json) fmt::print("{}\n", nlohmann::json(r).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
    std::fflush(stdout);
  };

  g_stop.store(false);
  auto prev_int = std::signal(SIGINT, on_signal);
  auto prev_term = std::signal(SIGTERM, on_signal);  // Slurm and Kubernetes stop jobs with SIGTERM
  const auto t0 = std::chrono::steady_clock::now();
  bench::BatchOutcome res = bench::run_batch(todo, bo, factory, events, g_stop);
  std::signal(SIGINT, prev_int);
  std::signal(SIGTERM, prev_term);
  progress.close();
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

  // The summary of everything this shard has recorded (this run and the runs it resumed).
  std::set<std::string> ids;
  for (const auto& p : mine) ids.insert(p.id);
  std::vector<report::ResultRecord> recorded;
  for (auto& r : report::read_results({out}))
    if (ids.count(r.problem)) recorded.push_back(std::move(r));
  const int code = !res.env_failure.empty() ? static_cast<int>(ExitCode::environment)
                   : res.not_run > 0        ? static_cast<int>(ExitCode::failed)
                                            : 0;
  // Samples: the summary of each problem's best sample, and the sampling metrics beside it.
  const bool samples_recorded = report::has_samples(recorded);
  const std::vector<report::ResultRecord> per_problem =
      samples_recorded ? report::best_sample_per_problem(recorded) : recorded;
  if (a.json) {
    // The last line of the JSON-lines stream: one object, on one line like the records.
    nlohmann::json end = {{"summary", summary_array(per_problem)},
                          {"out", out.string()},
                          {"problems", mine.size()},
                          {"recorded", recorded.size()},
                          {"ran", res.finished},
                          {"not_run", res.not_run},
                          {"wall_s", wall},
                          {"environment_failure", res.env_failure}};
    if (samples_recorded) {
      end["sampling"] = nlohmann::json::array();
      for (const auto& s : report::summarize_samples(recorded)) end["sampling"].push_back(s);
    }
    fmt::print("{}\n", end.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
  } else {
    fmt::print("{} of {} {} recorded in {} ({} this run, {}); merge shards with `kagent report`\n{}", recorded.size(),
               items.size(), sampling ? "sample(s)" : "problem(s)", out.string(), res.finished,
               BatchProgress::clock(wall), report::render_summary(report::summarize(per_problem), false));
    if (samples_recorded)
      fmt::print("each problem's best sample above; over the samples:\n{}",
                 report::render_sampling(report::summarize_samples(recorded), false));
  }
  if (!res.env_failure.empty()) fmt::print(stderr, "kagent bench: workers stopped: {}\n", res.env_failure);
  if (res.not_run > 0 && res.env_failure.empty())
    fmt::print(stderr, "kagent bench: {} problem(s) not run; continue with --resume\n", res.not_run);
  return code;
}

}  // namespace

Command add_bench_command(CLI::App& app) {
  auto a = std::make_shared<BenchArgs>();
  CLI::App* sub =
      app.add_subcommand("bench", "Run a suite of problems (KernelBench folders) on every GPU: results.jsonl");
  set_examples(sub, {
                        {"kagent bench $KAGENT_KERNELBENCH_DIR/level1 --solutions examples/kernelbench --gpus 0,1",
                         "one solution per problem on two GPUs, records appended to results.jsonl"},
                        {"kagent bench $KAGENT_KERNELBENCH_DIR/level1 --samples samples/ --out samples.jsonl --resume",
                         "every sample of every problem, skipping those already recorded; pass@k in the summary"},
                        {"kagent bench $KAGENT_KERNELBENCH_DIR/level2 --agent --minutes 20 --shard 0/4",
                         "kagent optimize on a quarter of the problems (one job of four)"},
                    });
  sub->add_option("paths", a->paths, "KernelBench level folders, problem files (.py, op.json), folders of op.json")
      ->required()
      ->check(CLI::ExistingPath);
  sub->add_option("--solutions", a->solutions,
                  "Evaluate the kernels in DIR (DIR/<level>/<problem>.cu or DIR/<problem>.cu, or a ModelNew solution "
                  "<problem>.py in their place)")
      ->check(CLI::ExistingDirectory);
  sub->add_option("--samples", a->samples,
                  "Evaluate N samples per problem: DIR/<level>/<problem>/*.cu|*.py (or DIR/<problem>/), a record "
                  "each; the summary adds pass@k, fast_p@k and best-of-k")
      ->check(CLI::ExistingDirectory);
  sub->add_flag("--agent", a->agent, "Run kagent optimize on each problem (budget and LLM flags below)");
  sub->add_option("--gpus", a->gpus, "GPU indices, e.g. 0,1 (default: all)");
  sub->add_option("--jobs", a->jobs,
                  "Workers per GPU (default 1; more share the GPU: they compile in parallel, their measurements queue)")
      ->check(CLI::Range(1, 64));
  sub->add_option("--build-jobs", a->build_jobs,
                  "--samples: threads that compile and build samples ahead while the GPUs measure (default: the "
                  "machine's cores less two per worker; 0: each sample in its turn)")
      ->check(CLI::NonNegativeNumber);
  sub->add_option("--shard", a->shard,
                  "Take shard I of N (0-based, I/N); default from SLURM_ARRAY_TASK_ID or "
                  "JOB_COMPLETION_INDEX + KAGENT_SHARD_COUNT");
  sub->add_option("--out", a->out, "Results file (default results.jsonl, or results.shard-I-of-N.jsonl)");
  sub->add_flag("--resume", a->resume, "Continue: skip the problems the results file already has");
  sub->add_option("--filter", a->filter, "Only problems whose id (level/name) matches this regex");
  sub->add_option(
         "--timeout", a->timeout_s,
         "Seconds: per evaluation on the GPU (solutions, samples; default 120), per agent run (--agent; default none)")
      ->check(CLI::Range(1.0, 1e6));
  sub->add_option("--arch", a->arch, "Compile target (default: each GPU's)");
  sub->add_option("--precision", a->precision, "fp32, tf32, fp16 or bf16 for every problem (default: each op's)");
  sub->add_flag("--refresh-baselines", a->refresh_baselines, "Re-measure torch eager and torch.compile");
  sub->add_flag("--list", a->list, "Print the problems this shard would run, and exit");
  sub->add_flag("--json", a->json, "One JSON record per line as problems finish, then a JSON summary");
  sub->add_option("--runs", a->runs, "--agent: folder for the run folders (default: beside --out, runs/)");
  add_llm_flags(sub, &a->llm, LlmFlagsFor::bench);
  sub->add_option("--turns", a->turns, "--agent: turn budget per problem")->check(CLI::Range(1, 10000));
  sub->add_option("--minutes", a->minutes, "--agent: time budget per problem")->check(CLI::Range(0.01, 100000.0));
  sub->add_option("--max-tokens", a->max_tokens, "--agent: token budget per problem");
  sub->add_flag("--no-shell", a->no_shell, "--agent: no shell tool");
  add_op_flags(sub, &a->overrides);
  add_measure_flags(sub, &a->measure);
  return {sub, [a]() { return run_bench(*a); }};
}

}  // namespace kagent::cli
