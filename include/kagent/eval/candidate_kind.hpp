#pragma once
// A kind of candidate: what differs between a plan .cu (compiled by NVRTC, run by kagent-runner) and
// a ModelNew .py (built and run by its own worker), behind one interface, so that the rest of kagent
// (the reward, the records, check, bench, the agent's run folder) gets the same EvalReport from any
// kind and asks the kind, never the file name, what to do.
//
// Evaluator::evaluate holds the steps every kind shares, once, in this order: the GPU (needs_gpu),
// a baseline of the same kind, the report's header, the reference (a PyTorch one loaded in the
// server, its eager/torch.compile baselines measured); then the kind's KindEvaluation: build()
// outside the GPU lock, measure() under it (each request limited by EvalContext::timeout, which the
// deadline cuts); then a native reference's time as the eager baseline, the profile's peaks
// (profiles_launches), the reward, an out-of-memory failure settled. A kind's own file holds only
// the rest. The built-in kinds are listed in src/eval/candidate_kinds.cpp, one entry each;
// candidate_kinds.hpp finds a file's or a candidate's kind.
#include <chrono>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "kagent/compile/compiler.hpp"
#include "kagent/eval/ahead.hpp"
#include "kagent/eval/candidate_kinds.hpp"
#include "kagent/eval/evaluator.hpp"
#include "kagent/spec/candidate.hpp"
#include "kagent/spec/op.hpp"

namespace kagent {

// One evaluation as its kind sees it, made by Evaluator::evaluate once the shared steps before the
// kind's own are done: what is evaluated against what, and the evaluator's means (its compiler, its
// runner, its reference server), which outlive the evaluation.
class EvalContext {
 public:
  EvalContext(Evaluator& evaluator, const Candidate& candidate, const Candidate* baseline, const Op& op,
              const PyTorchReference* pytorch, EvalMode mode);

  const Candidate& candidate;
  const Candidate* baseline;        // kagent check's previous version, of the same kind; nullptr: none
  const Op& op;                     // as the candidate sees it: a PyTorch reference's signature filled in
  const PyTorchReference* pytorch;  // the loaded PyTorch reference; nullptr for a native one
  EvalMode mode;

  const EvalOptions& options() const;
  // The limit of one request to a child: EvalOptions::timeout, cut to what the deadline
  // (Evaluator::set_deadline) leaves now, at least a second.
  std::chrono::milliseconds timeout() const;
  const std::string& arch() const;  // the compile target
  const Compiler& compiler() const;
  // A compiled module in the evaluator's work folder, for the runner to load: its path.
  std::string write_cubin(const CompileResult& r);
  std::string harness_cubin();  // kagent's own kernels (comparison, L2 flush) for this GPU
  ChildClient& runner();
  RefServer& ref_server();  // the PyTorch reference's server (only when pytorch is set)
  // What was started ahead for this candidate (Evaluator::expect), or null.
  std::unique_ptr<AheadWork> take_ahead();
  // A native reference's timings measured by this evaluator, by key: timed once per (reference,
  // shapes, arch, stop rule), not again for every candidate.
  std::map<std::string, TimingSummary>& native_reference_times();

 private:
  Evaluator& ev_;
};

// The kind's own steps of one evaluation; Evaluator::evaluate runs them between the shared ones.
class KindEvaluation {
 public:
  virtual ~KindEvaluation() = default;
  // Outside the GPU lock: the candidate compiled or built (rep.compile; a baseline that does not
  // build: rep.baseline_error), and whatever else takes no GPU time of its own. False when the report
  // already holds the candidate's failure (rep.compile not ok, or a failed load in rep.outcome):
  // nothing is measured then, and the reward is taken from what the report says.
  virtual bool build(EvalReport& rep) = 0;
  // Under the GPU lock: the trials, the timing, the A/B pairs (rep.ran, rep.outcome). The candidate's
  // failures go into the report; the environment's are thrown (EnvError, Error).
  virtual void measure(EvalReport& rep) = 0;
};

class CandidateKind {
 public:
  virtual ~CandidateKind() = default;
  // Candidate::kind of its candidates, and what records call the kind: "plan", "modelnew".
  virtual std::string_view name() const = 0;
  // What messages call one of its candidates: "a plan candidate", "a ModelNew solution".
  virtual std::string_view noun() const = 0;
  // The file extensions of this kind (".cu"); the first is the one a run folder keeps its
  // candidates under (candidates/NNN.cu, best.cu). Discovery (bench's solutions) tries them in order.
  virtual std::vector<std::string> extensions() const = 0;
  // A file's text as a candidate of this kind (Candidate::kind = name()), whatever the file's name;
  // InputError naming the file (and line) when it is not one.
  virtual Candidate parse(std::string source, const std::filesystem::path& path) const = 0;
  // Compiled on its own, before any GPU, its plan checked against op when given: kagent compile, the
  // agent's compile and profile tools, Evaluator::compile. A kind that is built only when it is
  // evaluated throws InputError saying how it is built (and compiles_before_evaluation is false).
  virtual CompileResult compile(const Candidate& cand, const Op* op, const Compiler& compiler,
                                const std::string& arch) const = 0;
  virtual bool compiles_before_evaluation() const { return true; }
  // Work on the candidate that needs no GPU and can run ahead of its evaluation, on any thread and
  // beside another candidate's timing (judge/prebuild.hpp): its result lands where the evaluation
  // looks first (the compile cache, a solution's build folder), so the evaluation finds it done.
  // Best effort: what fails here is done again, and reported, by the evaluation. Default: compile().
  virtual void prebuild(const Candidate& cand, const Compiler& compiler, const std::string& arch) const {
    (void)compile(cand, nullptr, compiler, arch);
  }
  // Whether start_ahead does anything for this kind (the evaluator then starts it on its helper thread).
  virtual bool starts_ahead() const { return false; }
  // Work for the candidate before its turn, on the evaluator's helper thread while another candidate
  // is measured (ahead.hpp), that runs none of its code: a ModelNew worker started and warmed. Its
  // evaluation takes it with EvalContext::take_ahead and must find it usable as it would have made it.
  // May throw: the evaluation then does the work itself.
  virtual std::unique_ptr<AheadWork> start_ahead(const Candidate& cand, const Op& op,
                                                 const AheadOptions& options) const {
    (void)cand, (void)op, (void)options;
    return nullptr;
  }
  // Whether evaluating one needs this machine's GPU: Evaluator::evaluate then throws EnvError without
  // one before anything else (exit 3, not a compile verdict). Every kind whose code runs there.
  virtual bool needs_gpu() const { return true; }
  // Whether EvalMode::profile measures each launch on its own (then a correct candidate's report
  // also gets this GPU's peaks, for the roofline).
  virtual bool profiles_launches() const { return false; }
  // This kind's steps of one evaluation. InputError for what the kind cannot be evaluated against
  // (a ModelNew solution and a native reference).
  virtual std::unique_ptr<KindEvaluation> evaluation(EvalContext& ctx) const = 0;
};

}  // namespace kagent
