#pragma once
// The two kinds of batch job: evaluating the existing solutions in a folder (`--solutions DIR`)
// and running the agent on each problem (`--agent`, one `kagent optimize` process per problem,
// each in its own run folder), and how their outcomes become results.jsonl records.
#include <atomic>
#include <chrono>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "kagent/agent/optimize_run.hpp"
#include "kagent/bench/batch.hpp"
#include "kagent/compile/cache.hpp"
#include "kagent/eval/evaluator.hpp"
#include "kagent/spec/op_overrides.hpp"

namespace kagent::bench {

struct SolutionJobOptions {
  std::filesystem::path solutions;  // DIR/<level>/<name>.cu or DIR/<name>.cu
  EvalOptions eval;                 // its gpu is set per worker
  OpOverrides overrides;            // laid over each problem's settings (--atol, --rtol)
  std::shared_ptr<CompileCache> cache;
  std::optional<Precision> precision;  // --precision: every problem at this precision (else each op's)
};

// The GPU side (runner, reference server) starts at the first problem that has a solution, so a
// batch of unsolved problems needs no GPU.
std::unique_ptr<ProblemJob> make_solution_job(const SolutionJobOptions& options, int gpu);

struct AgentJobOptions {
  std::filesystem::path runs_dir;  // each problem runs in runs_dir/<level>/<name>
  std::string kagent;              // the kagent executable
  // Every run's options (budgets, LLM, precision, ...): each problem sets op or resume, out and gpu,
  // and its child `kagent optimize --options FILE` reads them from runs_dir/<level>/<name>/
  // optimize-options.json.
  agent::OptimizeRunOptions options;
  std::chrono::seconds timeout{0};          // wall-clock limit per problem (0: none)
  const std::atomic<bool>* stop = nullptr;  // turns true on an interrupt: the run is stopped, not recorded
};

std::unique_ptr<ProblemJob> make_agent_job(const AgentJobOptions& options, int gpu);

// An evaluation's verdict as a record: correct (tier, times, speedups), or compile_error,
// incorrect, crash, timeout with the first lines of what went wrong.
report::ResultRecord record_from_report(const Problem& p, const EvalReport& r);

// A finished agent run as a record, from its result.json alone: correct (the best candidate's
// score) when its best candidate is; incorrect when it evaluated only wrong ones; unsolved when it
// evaluated none. The best speedup vs eager reached by each turn is result.json's best_by_turn
// (none from a version-1 result.json, which did not keep it, nor the baselines, GPU or stop rule).
report::ResultRecord record_from_run(const Problem& p, const std::filesystem::path& run_dir);

}  // namespace kagent::bench
