// eval_latency: wall time of `kagent eval` work for bundled examples, cold (a new runner: process
// start, CUDA context, module loads, reference timed) and warm (runner running, cubins cached,
// reference timing cached), plus repeatability: the coefficient of variation of the candidate's
// median over --repeat warm evaluations. Prints one table. Needs a GPU.
// With --pytorch CAND.cu PROBLEM.py (repeatable) it measures those instead: candidates against
// PyTorch references, cold = a new runner and a new reference server (python, torch import,
// problem load; baselines from the disk cache after the first), warm = both running.
// "warm s, no CUPTI" is the same warm evaluation without the CUPTI cross-check (timed in
// alternation with the warm one, so the difference is the cross-check's cost); "CUPTI span/kernels"
// is the events' timed span over the kernels' durations as CUPTI saw them. "warm s, no guards" is
// the warm evaluation without the guard bands' and seals' checks (EvalOptions::guard_checks, also
// in alternation): the difference is what catching writes outside the buffers costs.
// Usage: eval_latency [--reps N] [--repeat M] [--pytorch CAND.cu PROBLEM.py]...
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>

#include <fmt/format.h>

#include "kagent/common/text_table.hpp"
#include "kagent/eval/evaluator.hpp"
#include "kagent/gpu/devices.hpp"

using namespace kagent;
using Clock = std::chrono::steady_clock;
namespace fs = std::filesystem;

namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n == 0 ? 0 : (n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]));
}

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

}  // namespace

int main(int argc, char** argv) {
  int reps = 5, repeat = 10;
  std::vector<std::pair<std::string, std::string>> pytorch_cases;
  for (int i = 1; i + 1 < argc; ++i) {
    if (!std::strcmp(argv[i], "--reps"))
      reps = std::max(1, std::atoi(argv[++i]));
    else if (!std::strcmp(argv[i], "--repeat"))
      repeat = std::max(2, std::atoi(argv[++i]));
    else if (!std::strcmp(argv[i], "--pytorch") && i + 2 < argc) {
      pytorch_cases.emplace_back(fs::absolute(argv[i + 1]).string(), fs::absolute(argv[i + 2]).string());
      i += 2;
    }
  }
  if (query_gpus().gpus.empty()) {
    fmt::print(stderr, "eval_latency: no GPU\n");
    return 3;
  }
  const fs::path src = KAGENT_SOURCE_DIR;
  std::vector<std::pair<std::string, std::string>> cases = {
      {"examples/vector_add/cand_naive.cu", "examples/vector_add/op.json"},
      {"examples/vector_add/cand_vec4.cu", "examples/vector_add/op.json"},
      {"examples/softmax/cand_online.cu", "examples/softmax/op.json"},
      {"examples/vector_add/cand_naive.cu", "benchmarks/ops/add_100us/op.json"},  // the target's kernel length
  };
  if (!pytorch_cases.empty()) cases = pytorch_cases;
  auto cache = std::make_shared<CompileCache>(fs::temp_directory_path() / "kagent-eval-bench-cache");
  EvalOptions opt;
  opt.runner_path = (fs::path(KAGENT_BINARY_DIR) / "kagent-runner").string();

  TextTable t({"candidate (op)", "kernel median ms", "reference ms", "samples", "cold s", "warm s", "warm s, no CUPTI",
               "warm s, no guards", "CUPTI span/kernels", "medians CV %", "tier"});
  for (const auto& [cand_rel, op_rel] : cases) {
    Op op = load_op(src / op_rel);
    Candidate cand = load_candidate(src / cand_rel);
    std::vector<double> cold, warm, warm_plain, warm_unguarded, medians;
    EvalReport last;
    for (int i = 0; i < reps; ++i) {  // cold: a fresh Evaluator, so a fresh runner each time
      auto t0 = Clock::now();
      Evaluator ev(opt, cache);
      last = ev.evaluate(op, cand);
      cold.push_back(seconds_since(t0));
    }
    Evaluator ev(opt, cache);
    EvalOptions plain_opt = opt;
    plain_opt.cupti_check = false;
    Evaluator plain(plain_opt, cache);
    EvalOptions unguarded_opt = opt;
    unguarded_opt.guard_checks = false;
    Evaluator unguarded(unguarded_opt, cache);
    ev.evaluate(op, cand);  // prime: runner up, reference timed
    plain.evaluate(op, cand);
    unguarded.evaluate(op, cand);
    for (int i = 0; i < std::max(reps, repeat); ++i) {
      auto t0 = Clock::now();
      EvalReport r = ev.evaluate(op, cand);
      if (i < reps) warm.push_back(seconds_since(t0));
      t0 = Clock::now();
      plain.evaluate(op, cand);
      if (i < reps) warm_plain.push_back(seconds_since(t0));
      t0 = Clock::now();
      unguarded.evaluate(op, cand);
      if (i < reps) warm_unguarded.push_back(seconds_since(t0));
      if (i < repeat && r.outcome.candidate_time) medians.push_back(r.outcome.candidate_time->median_ms);
      last = r;
    }
    double mean = 0, var = 0;
    for (double m : medians) mean += m / medians.size();
    for (double m : medians) var += (m - mean) * (m - mean) / (medians.size() - 1);
    const auto& ct = last.outcome.candidate_time;
    const auto& eager = last.baselines.eager_ms;
    t.add_row({fmt::format("{} ({})", fs::path(cand_rel).filename().string(), op.name),
               ct ? fmt::format("{:.4f}", ct->median_ms) : "-", eager ? fmt::format("{:.4f}", *eager) : "-",
               ct ? std::to_string(ct->n) : "-", fmt::format("{:.3f}", median(cold)),
               fmt::format("{:.3f}", median(warm)), fmt::format("{:.3f}", median(warm_plain)),
               fmt::format("{:.3f}", median(warm_unguarded)),
               last.outcome.cupti && last.outcome.cupti->ran && last.outcome.cupti->kernel_ms > 0
                   ? fmt::format("{:.4f}", last.outcome.cupti->event_ms / last.outcome.cupti->kernel_ms)
                   : "-",
               fmt::format("{:.2f}", 100 * std::sqrt(var) / mean), std::to_string(last.reward.tier)});
  }
  fmt::print("eval_latency: medians of {} runs (cold = new runner), CV over {} warm evaluations\n{}", reps, repeat,
             t.render());
  return 0;
}
