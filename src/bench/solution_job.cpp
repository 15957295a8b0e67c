// --solutions DIR: each problem's existing candidate through the full evaluation (correctness
// trials, timing, baselines from the cache), on this worker's GPU.
#include <fmt/format.h>

#include "kagent/bench/jobs.hpp"
#include "kagent/common/error.hpp"
#include "kagent/eval/candidate_kinds.hpp"
#include "kagent/eval/report_score.hpp"
#include "kagent/spec/candidate.hpp"
#include "kagent/spec/op.hpp"

namespace kagent::bench {

namespace {

// The first lines of a long message (compile logs run to pages).
std::string head_lines(const std::string& text, int lines = 12) {
  size_t pos = 0;
  for (int i = 0; i < lines && pos != std::string::npos; ++i) {
    pos = text.find('\n', pos);
    if (pos != std::string::npos) ++pos;
  }
  if (pos == std::string::npos || pos >= text.size()) return text;
  return text.substr(0, pos) + "...";
}

class SolutionJob : public ProblemJob {
 public:
  SolutionJob(SolutionJobOptions o, int gpu) : opt_(std::move(o)), gpu_(gpu) { opt_.eval.gpu = gpu; }

  std::optional<report::ResultRecord> run(const Problem& p) override {
    auto solution = find_solution(opt_.solutions, p);
    if (!solution) {
      report::ResultRecord r;
      r.problem = p.id;
      r.level = p.level;
      r.status = "unsolved";
      r.error = fmt::format("no solution in {}", opt_.solutions.string());
      return r;
    }
    Op op;
    Candidate cand;
    try {
      op = load_op(p.path);
      if (opt_.precision) op = with_precision(std::move(op), *opt_.precision);
      opt_.overrides.apply(op);
    } catch (const InputError& e) {
      return error_record(p, fmt::format("the problem: {}", e.what()), gpu_);
    }
    try {
      cand = load_candidate(*solution);
    } catch (const InputError& e) {
      // The candidate's header (its launch plan) is part of the candidate: its fault.
      report::ResultRecord r = error_record(p, e.what(), gpu_);
      r.status = "compile_error";
      r.candidate = solution->string();
      return r;
    }
    if (!ev_) ev_ = std::make_unique<Evaluator>(opt_.eval, opt_.cache);  // evaluate throws EnvError: no GPU
    try {
      report::ResultRecord r = record_from_report(p, ev_->evaluate(op, cand));
      r.candidate = solution->string();
      return r;
    } catch (const EnvError&) {
      throw;
    } catch (const InputError& e) {
      // A plan that does not fit the problem (caught before the GPU), or a problem file that fails
      // in the reference server: the evaluator is still sound.
      report::ResultRecord r = error_record(p, e.what(), gpu_);
      r.candidate = solution->string();
      return r;
    }
  }

 private:
  SolutionJobOptions opt_;
  int gpu_;
  std::unique_ptr<Evaluator> ev_;
};

}  // namespace

std::unique_ptr<ProblemJob> make_solution_job(const SolutionJobOptions& options, int gpu) {
  return std::make_unique<SolutionJob>(options, gpu);
}

report::ResultRecord record_from_report(const Problem& p, const EvalReport& rep) {
  report::ResultRecord r;
  r.problem = p.id;
  r.level = p.level;
  r.candidate = rep.candidate;
  r.score = report_score(rep);
  if (!rep.compile.ok) {
    r.status = "compile_error";
    r.error = head_lines(rep.compile.log);
  } else if (rep.outcome.correct) {
    r.status = "correct";
  } else {
    const FailureStage stage = rep.outcome.failure_stage;
    r.status = stage == FailureStage::timeout ? "timeout" : stage == FailureStage::crash ? "crash" : "incorrect";
    r.error =
        head_lines(stage == FailureStage::none ? rep.outcome.message
                                               : fmt::format("{}: {}", failure_stage_name(stage), rep.outcome.message));
  }
  return r;
}

}  // namespace kagent::bench
