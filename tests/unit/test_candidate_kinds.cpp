// The candidate kinds behind one interface (eval/candidate_kind.hpp): the built-in list, and a third
// kind that only this file defines and registers. Finding a file's kind, loading it, bench's
// solution discovery, the run folder's file names, check's baseline and the evaluator's dispatch
// all reach it without a line of kagent changed: a new kind is its own file plus its line in
// src/eval/candidate_kinds.cpp.
#include <gtest/gtest.h>

#include <chrono>
#include <sstream>
#include <string>

#include "kagent/agent/run_record.hpp"
#include "kagent/agent/transcript.hpp"
#include "kagent/bench/problems.hpp"
#include "kagent/check/run.hpp"
#include "kagent/common/error.hpp"
#include "kagent/common/files.hpp"
#include "kagent/compile/options.hpp"
#include "kagent/eval/candidate_kind.hpp"
#include "kagent/eval/evaluator.hpp"
#include "kagent/eval/modelnew_worker.hpp"
#include "test_util.hpp"

namespace kagent {
namespace {

namespace fs = std::filesystem;

// What the toy kind's steps saw.
struct Seen {
  int built = 0;
  int measured = 0;
  std::chrono::milliseconds timeout{0};
};

// "toy <candidate ms> <reference ms>": correct, timed; "toy wrong": not correct; "toy nobuild": its
// build fails. It runs nothing and needs no GPU, so Evaluator::evaluate's shared steps run around
// it on any machine.
class ToyEvaluation : public KindEvaluation {
 public:
  ToyEvaluation(EvalContext& ctx, Seen& seen) : ctx_(ctx), seen_(seen) {}
  bool build(EvalReport& rep) override {
    ++seen_.built;
    rep.compile.ok = !has("nobuild");
    if (!rep.compile.ok) rep.compile.log = "toy: does not build";
    return rep.compile.ok;
  }
  void measure(EvalReport& rep) override {
    ++seen_.measured;
    seen_.timeout = ctx_.timeout();
    rep.ran = true;
    rep.outcome.trials_run = 1;
    if (has("wrong")) {
      rep.outcome.failure_stage = FailureStage::correctness;
      rep.outcome.message = "toy: wrong";
      return;
    }
    std::istringstream in(ctx_.candidate.source);
    std::string word;
    TimingSummary cand, ref;
    in >> word >> cand.median_ms >> ref.median_ms;
    rep.outcome.correct = true;
    rep.outcome.candidate_time = cand;
    rep.outcome.reference_time = ref;  // as a runner reports a native reference's time
  }

 private:
  bool has(const char* word) const { return ctx_.candidate.source.find(word) != std::string::npos; }
  EvalContext& ctx_;
  Seen& seen_;
};

class ToyKind : public CandidateKind {
 public:
  std::string_view name() const override { return "toy"; }
  std::string_view noun() const override { return "a toy candidate"; }
  std::vector<std::string> extensions() const override { return {".toy"}; }
  Candidate parse(std::string source, const fs::path& path) const override {
    if (source.rfind("toy", 0) != 0) throw InputError(path.string() + ": not a toy candidate");
    Candidate c;
    c.kind = "toy";
    c.path = path;
    c.source = std::move(source);
    return c;
  }
  CompileResult compile(const Candidate&, const Op*, const Compiler&, const std::string& arch) const override {
    CompileResult r;
    r.ok = true;
    r.arch = arch;
    r.log = "toy: nothing to compile";
    return r;
  }
  bool needs_gpu() const override { return false; }
  std::unique_ptr<KindEvaluation> evaluation(EvalContext& ctx) const override {
    return std::make_unique<ToyEvaluation>(ctx, seen);
  }
  mutable Seen seen;
};

// A kind that claims what another kind has.
class Claims : public ToyKind {
 public:
  Claims(std::string name, std::string extension) : name_(std::move(name)), extension_(std::move(extension)) {}
  std::string_view name() const override { return name_; }
  std::vector<std::string> extensions() const override { return {extension_}; }

 private:
  std::string name_, extension_;
};

bool contains(const std::string& hay, const std::string& needle) {
  return hay.find(needle) != std::string::npos;
}

TEST(CandidateKinds, TheBuiltInKindsAreAPlanAndAModelNewSolutionInThatOrder) {
  std::vector<const CandidateKind*> kinds = candidate_kinds();
  ASSERT_EQ(kinds.size(), 2u);
  EXPECT_EQ(kinds[0]->name(), "plan");
  EXPECT_EQ(kinds[0]->extensions(), std::vector<std::string>{".cu"});
  EXPECT_EQ(kinds[1]->name(), "modelnew");
  EXPECT_EQ(kinds[1]->extensions(), std::vector<std::string>{".py"});
  EXPECT_EQ(&kind_of_file("k.cu"), kinds[0]);
  EXPECT_EQ(&kind_of_file("sol.py"), kinds[1]);
  // A file no kind claims is a plan candidate, as it always was (kagent eval kernel.cuh).
  EXPECT_EQ(&kind_of_file("kernel.cuh"), kinds[0]);
  EXPECT_EQ(&kind_of_file("kernel"), kinds[0]);
}

TEST(CandidateKinds, AThirdKindIsAFilesKindWhileItIsRegistered) {
  test::TempDir t;
  const fs::path file = t.write("k.toy", "toy 1 2\n");
  ToyKind toy;
  Candidate c;
  {
    KindRegistration registered(toy);
    EXPECT_EQ(&kind_of_file(file), &toy);
    EXPECT_EQ(candidate_kinds().size(), 3u);
    c = load_candidate(file);
    EXPECT_EQ(c.kind, "toy");
    EXPECT_EQ(&kind_of(c), &toy);
    EXPECT_THROW(parse_candidate("not a toy", "other.toy"), InputError);
  }
  EXPECT_EQ(kind_of_file(file).name(), "plan");
  try {
    kind_of(c);
    ADD_FAILURE() << "a kind no longer registered was found";
  } catch (const InputError& e) {
    EXPECT_TRUE(contains(e.what(), "k.toy: no candidate kind is named 'toy' (the kinds: plan, modelnew)")) << e.what();
  }
}

TEST(CandidateKinds, ARegistrationMayNotTakeAnotherKindsNameOrExtension) {
  Claims cu("cuda", ".cu"), plan("plan", ".plan");
  EXPECT_THROW(KindRegistration{cu}, InputError);
  EXPECT_THROW(KindRegistration{plan}, InputError);
  EXPECT_EQ(candidate_kinds().size(), 2u);
}

TEST(CandidateKinds, BenchFindsASolutionOfAThirdKindAfterTheListedKinds) {
  ToyKind toy;
  KindRegistration registered(toy);
  test::TempDir t;
  bench::Problem p{"level1/19_ReLU", "level1", "19_ReLU", {}};
  t.write("level1/19_ReLU.toy", "toy 1 2\n");
  ASSERT_TRUE(bench::find_solution(t.path(), p).has_value());
  EXPECT_EQ(bench::find_solution(t.path(), p)->filename(), "19_ReLU.toy");
  t.write("level1/19_ReLU.cu", "");  // the built-in kinds come first
  EXPECT_EQ(bench::find_solution(t.path(), p)->filename(), "19_ReLU.cu");
}

TEST(CandidateKinds, TheRunFolderKeepsAThirdKindsExtension) {
  ToyKind toy;
  KindRegistration registered(toy);
  test::TempDir dir;
  agent::Transcript transcript(dir.path() / "transcript.jsonl");
  agent::RunRecord record(dir.path(), transcript);
  EvalReport first;
  first.reward.tier = 1;
  agent::CandidateScore s = record.evaluated("ws/k.toy", "toy 1 2\n", first);
  EXPECT_EQ(s.file(), "candidates/001.toy");
  EXPECT_EQ(read_text_file(dir.path() / "best.toy"), "toy 1 2\n");
  EXPECT_EQ(nlohmann::json(s).get<agent::CandidateScore>().best_file(), "best.toy");  // a resumed run
  EvalReport better;
  better.reward.tier = 2;
  record.evaluated("ws/k.cu", "/*kagent {} */", better);
  EXPECT_TRUE(fs::exists(dir.path() / "best.cu"));
  EXPECT_FALSE(fs::exists(dir.path() / "best.toy")) << "two best files";
}

TEST(CandidateKinds, CheckParsesABaselineAsTheKernelsKindWhateverItsName) {
  ToyKind toy;
  KindRegistration registered(toy);
  test::TempDir t;
  check::CheckEntry e;
  e.name = "toy";
  e.op = test::examples_dir() / "vector_add/op.json";
  e.kernel = t.write("k.toy", "toy 1 2\n");
  e.t.baseline_ref = "HEAD~1";  // its name is "k.toy@HEAD~1": the toy kind by the kernel's, not by the name
  check::CheckOptions o;
  o.cache = std::make_shared<CompileCache>(t.path() / "cache");

  e.baseline_source = "toy 2 2\n";
  std::vector<check::Verdict> v = check::run_checks({e}, o, [](const check::Verdict&) {});
  ASSERT_EQ(v.size(), 1u);
  for (const auto& r : v[0].reasons) EXPECT_FALSE(contains(r, "launch plan is invalid")) << r;

  e.baseline_source = "not a toy\n";
  v = check::run_checks({e}, o, [](const check::Verdict&) {});
  ASSERT_EQ(v.size(), 1u);
  EXPECT_EQ(v[0].status, "fail");
  ASSERT_FALSE(v[0].reasons.empty());
  EXPECT_TRUE(contains(v[0].reasons[0], "k.toy@HEAD~1: not a toy candidate")) << v[0].reasons[0];
}

class EvaluatorDispatch : public ::testing::Test {
 protected:
  void SetUp() override { cache = std::make_shared<CompileCache>(cache_dir.path()); }
  static Op vector_add() {
    Op op = load_op(test::examples_dir() / "vector_add/op.json");
    op.compile_baseline_ms = 1.2;
    return op;
  }

  ToyKind toy;
  KindRegistration registered{toy};
  test::TempDir dir, cache_dir;
  std::shared_ptr<CompileCache> cache;
};

// The shared steps of Evaluator::evaluate (the report's header, the native reference's baselines,
// the deadline, the GPU lock, the reward) run around the third kind's build and measure.
TEST_F(EvaluatorDispatch, TheSharedStepsRunAroundAThirdKindsOwn) {
  Evaluator ev(EvalOptions{}, cache);
  ev.set_deadline(std::chrono::steady_clock::now() + std::chrono::seconds(30));
  const Op op = vector_add();
  EvalReport r = ev.evaluate(op, load_candidate(dir.write("fast.toy", "toy 1.0 2.0\n")));
  EXPECT_EQ(toy.seen.built, 1);
  EXPECT_EQ(toy.seen.measured, 1);
  EXPECT_GT(toy.seen.timeout.count(), 0);
  EXPECT_LE(toy.seen.timeout, std::chrono::seconds(30)) << "the deadline cuts the timeout";
  EXPECT_EQ(r.candidate, (dir.path() / "fast.toy").string());
  EXPECT_EQ(r.op, "vector_add");
  EXPECT_EQ(r.arch, ev.arch());
  EXPECT_TRUE(r.ran);
  ASSERT_TRUE(r.baselines.eager_ms.has_value()) << "the native reference's time is the eager baseline";
  EXPECT_DOUBLE_EQ(*r.baselines.eager_ms, 2.0);
  EXPECT_EQ(r.baselines.compile_ms, op.compile_baseline_ms);
  EXPECT_EQ(r.reward.tier, 3) << r.reward.reason;
  EXPECT_DOUBLE_EQ(r.reward.speedup_vs_eager.value_or(0), 2.0);
  // Measured under the GPU lock (one file per GPU under the cache's locks/).
  EXPECT_FALSE(fs::is_empty(cache_dir.path() / "locks"));
}

TEST_F(EvaluatorDispatch, AThirdKindsFailuresAreRewardedByTheSharedRule) {
  Evaluator ev(EvalOptions{}, cache);
  EvalReport wrong = ev.evaluate(vector_add(), load_candidate(dir.write("wrong.toy", "toy wrong\n")));
  EXPECT_EQ(wrong.reward.tier, -1);
  EXPECT_EQ(wrong.reward.reason, "compiled but not correct");
  EvalReport unbuilt = ev.evaluate(vector_add(), load_candidate(dir.write("nobuild.toy", "toy nobuild\n")));
  EXPECT_EQ(toy.seen.measured, 1) << "a candidate that does not build is not measured";
  EXPECT_EQ(unbuilt.reward.tier, -1);
  EXPECT_EQ(unbuilt.reward.reason, "did not compile");
  EXPECT_EQ(unbuilt.compile.log, "toy: does not build");
}

TEST_F(EvaluatorDispatch, CompilingAndTheBaselineGoByTheCandidatesKind) {
  Evaluator ev(EvalOptions{}, cache);
  const Candidate toy_cand = load_candidate(dir.write("k.toy", "toy 1 2\n"));
  EXPECT_EQ(ev.compile(toy_cand, vector_add()).log, "toy: nothing to compile");
  const Candidate plan = load_candidate(test::examples_dir() / "vector_add/cand_naive.cu");
  try {
    ev.evaluate(vector_add(), toy_cand, EvalMode::score, &plan);
    ADD_FAILURE() << "a baseline of another kind was taken";
  } catch (const InputError& e) {
    EXPECT_TRUE(contains(e.what(), "the baseline of a toy candidate must be a toy candidate too")) << e.what();
  }
  EXPECT_EQ(toy.seen.built, 0);
  // A kind built only when it is evaluated compiles nothing before (ModelNew: its worker builds it),
  // and kagent compile refuses it with how it is built.
  const Candidate solution = parse_candidate("class ModelNew:\n    pass\n", "sol.py");
  CompileResult r = ev.compile(solution, vector_add());
  EXPECT_TRUE(r.ok);
  EXPECT_EQ(r.log, "a ModelNew solution: built when it is evaluated");
  try {
    kind_of(solution).compile(solution, nullptr, Compiler(find_cuda_paths(), cache), "sm_90a");
    ADD_FAILURE() << "a ModelNew solution was compiled";
  } catch (const InputError& e) {
    EXPECT_TRUE(contains(e.what(), "not compiled by NVRTC")) << e.what();
  }
}

}  // namespace
}  // namespace kagent

// A ModelNew solution's extensions are built for the compile target whether or not its worker sees
// the GPU (building ahead has none), in the form TORCH_CUDA_ARCH_LIST takes.
TEST(ModelNewWorker, TorchArchListOfTheCompileTarget) {
  EXPECT_EQ(kagent::torch_arch_list("sm_90a"), "9.0");
  EXPECT_EQ(kagent::torch_arch_list("sm_90"), "9.0");
  EXPECT_EQ(kagent::torch_arch_list("sm_100a"), "10.0");
  EXPECT_EQ(kagent::torch_arch_list("sm_120"), "12.0");
  EXPECT_EQ(kagent::torch_arch_list("sm_80"), "8.0");
  EXPECT_EQ(kagent::torch_arch_list("compute_90"), "");
  EXPECT_EQ(kagent::torch_arch_list("sm_9"), "");
  EXPECT_EQ(kagent::torch_arch_list(""), "");
}
