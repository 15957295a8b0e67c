// The ModelNew kind of candidate: a KernelBench-style .py solution defining class ModelNew (CUDA
// through torch's load_inline, Triton, ...), built and run by its own sandboxed worker
// (modelnew_worker.hpp), its outputs compared by kagent-runner (the "compare" request). Evaluator::
// evaluate runs the steps every kind shares around the ones here, so the reward, the records, the
// reports, check and bench get the same EvalReport a plan gets.
//
// The protocol, in the order it runs:
//   load      (build, outside the GPU lock) the worker imports the problem, snapshots the harness,
//             imports the solution (the build: load_inline, Triton), builds ModelNew under the
//             reference's seed. A build error is a compile failure (tier -1) with the compiler's message.
//   trials    (measure, under the lock) per trial a fresh seed: the reference server makes inputs and
//             outputs (and fp64 twins); the worker copies the inputs in by CUDA IPC, calls ModelNew
//             once, exports its outputs and its input tensors; the runner compares both with the server's.
//   timing    in the worker (timer.py: poison, restore, L2 flush, warm-up, stopping rule, primitives
//             captured before the solution was imported, a tamper check after every sample), then a
//             few samples under the profiler (trace.py): kernels outside the timed span flag
//             timing_untrusted, PyTorch's own kernels carrying most of the time flag torch_ops.
//   re-checks the outputs of a call after timing against the last trial's, then a trial on fresh
//             inputs (a solution that caches by tensor identity returns stale outputs there).
//   A/B       with a baseline solution (kagent check): a second worker, samples in alternation.
#include <algorithm>
#include <filesystem>
#include <map>
#include <regex>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "fresh_seed.hpp"
#include "kagent/common/error.hpp"
#include "kagent/common/files.hpp"
#include "kagent/eval/candidate_kind.hpp"
#include "kagent/eval/drawn_inputs.hpp"
#include "kagent/eval/modelnew_worker.hpp"
#include "kagent/eval/torch_ops_rule.hpp"
#include "kagent/protocol/runner_messages.hpp"
#include "kagent/sandbox/process.hpp"

namespace kagent {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

namespace {

void fail(EvalOutcome& o, const WorkerFailure& f) {
  o.correct = false;
  switch (f.kind) {
    case WorkerFailure::Kind::tamper:
      o.failure_stage = FailureStage::tamper;
      break;
    case WorkerFailure::Kind::timeout:
      o.failure_stage = FailureStage::timeout;
      break;
    case WorkerFailure::Kind::crash:
      o.failure_stage = FailureStage::crash;
      break;
    default:
      o.failure_stage = FailureStage::launch;
  }
  o.message = f.message;
  // torch.cuda.OutOfMemoryError, or the driver's error through an extension: settled by the
  // evaluator, which asks whether another process held the GPU's memory (out_of_memory.cpp).
  o.out_of_memory = f.message.find("OutOfMemoryError") != std::string::npos ||
                    f.message.find("CUDA_ERROR_OUT_OF_MEMORY") != std::string::npos ||
                    f.message.find("CUDA out of memory") != std::string::npos;
}

// The forward's tensors of a trial, by the signature's names and in its order.
std::vector<IpcTensorRef> forward_inputs(const std::vector<IpcTensorRef>& all, const std::vector<TensorSpec>& inputs) {
  std::vector<IpcTensorRef> out;
  for (const auto& t : inputs) {
    auto it = std::find_if(all.begin(), all.end(), [&](const IpcTensorRef& r) { return r.name == t.name; });
    if (it == all.end()) throw EnvError(fmt::format("the reference server's trial has no tensor '{}'", t.name));
    out.push_back(*it);
  }
  return out;
}

// The worker's tensors of a trial or timing reply: outputs, then inputs.
std::vector<IpcTensorRef> worker_tensors(const nlohmann::json& body) {
  auto out = body.at("outputs").get<std::vector<IpcTensorRef>>();
  auto in = body.at("inputs").get<std::vector<IpcTensorRef>>();
  out.insert(out.end(), in.begin(), in.end());
  return out;
}

void merge_errors(std::vector<OutputErrors>& into, const std::vector<OutputErrors>& from) {
  if (into.size() < from.size()) into.resize(from.size());
  for (size_t i = 0; i < from.size(); ++i) {
    OutputErrors& e = into[i];
    const OutputErrors& f = from[i];
    e.tensor = f.tensor;
    e.max_abs = std::max(e.max_abs, f.max_abs);
    if (f.max_abs_fp64) e.max_abs_fp64 = std::max(e.max_abs_fp64.value_or(0.0), *f.max_abs_fp64);
    if (f.ref_error_fp64) e.ref_error_fp64 = std::max(e.ref_error_fp64.value_or(0.0), *f.ref_error_fp64);
    e.passed_by_fp64 = std::max(e.passed_by_fp64, f.passed_by_fp64);
    if (f.zero_share > 0) e.zero_share = f.zero_share;
    if (f.rel_l2) e.rel_l2 = std::max(e.rel_l2.value_or(0.0), *f.rel_l2);
    if (f.ref_rel_l2_fp64) e.ref_rel_l2_fp64 = std::max(e.ref_rel_l2_fp64.value_or(0.0), *f.ref_rel_l2_fp64);
    // The precision rule's tightest limit over the checks, with the precision that set it.
    if (f.precision_limit && (!e.precision_limit || *f.precision_limit < *e.precision_limit)) {
      e.precision_limit = f.precision_limit;
      e.precision_nearest = f.precision_nearest;
    }
    if (!f.precision_note.empty() && e.precision_note.empty()) e.precision_note = f.precision_note;
  }
}

// The static check's findings as notes in the record: evidence for a person, not a verdict.
void note_static_findings(const nlohmann::json& report, EvalOutcome& o) {
  if (!report.contains("findings")) return;
  for (const auto& f : report["findings"])
    o.flags.push_back(
        {FlagKind::note, "", 0, 0,
         fmt::format("static check: {} (line {}): {}", f.value("kind", ""), f.value("line", 0), f.value("text", ""))});
}

std::string kernel_list(const nlohmann::json& rows, size_t at_most) {
  std::string out;
  size_t n = 0;
  for (const auto& r : rows) {
    if (n++ == at_most) {
      out += fmt::format(", and {} more", rows.size() - at_most);
      break;
    }
    out += fmt::format("{}{} on stream {} ({:.1f} us)", out.empty() ? "" : ", ", r.value("name", "?"),
                       r.value("stream", nlohmann::json()).dump(), r.value("us", 0.0));
  }
  return out;
}

// t[key] when it is an array or object, else an empty one.
nlohmann::json member(const nlohmann::json& t, const char* key, nlohmann::json empty) {
  auto it = t.find(key);
  if (it != t.end() && (it->is_array() || it->is_object())) return *it;
  return empty;
}

// The profiler's view of the samples as the CUPTI cross-check and its flags; under the policy fail,
// the failure PyTorch's operators make (applied once the re-checks have passed), else "".
std::string read_trace(const nlohmann::json& t, double median_ms, TorchOps policy, EvalOutcome& o) {
  CuptiCheck c;
  c.ran = true;
  c.samples = t.value("samples", 0);
  const nlohmann::json kernels = member(t, "kernels", nlohmann::json::array());
  for (const auto& k : kernels) c.launches_seen += k.value("calls", 0);
  c.launches_expected = c.launches_seen;
  c.off_stream = t.value("off_stream", 0);
  c.kernel_ms = t.value("kernel_us", 0.0) / 1e3;
  c.kernel_median_ms = c.samples > 0 ? c.kernel_ms / c.samples : 0;
  c.event_ms = median_ms * c.samples;
  const nlohmann::json uncovered = member(t, "uncovered", nlohmann::json::array());
  const nlohmann::json stray = member(t, "stray", nlohmann::json::array());
  std::string problem = t.value("problem", "");
  if (!uncovered.empty())
    problem += fmt::format("{}{} kernel(s) ran past the timed span (work the stop event did not wait for): {}",
                           problem.empty() ? "" : "; ", uncovered.size(), kernel_list(uncovered, 3));
  if (!stray.empty())
    problem += fmt::format("{}{} kernel(s) launched outside the solution's call (another thread): {}",
                           problem.empty() ? "" : "; ", stray.size(), kernel_list(stray, 3));
  c.problem = problem;
  if (!uncovered.empty() || !stray.empty())
    o.flags.push_back(
        {FlagKind::timing_untrusted, "", static_cast<double>(uncovered.size() + stray.size()), 0, problem});
  o.cupti = c;

  return judge_torch_ops(t, c, policy, o);
}

// The worker of a solution's evaluation, the same whether it is started ahead (start_ahead) or in
// the evaluation's turn: the solution's build folder, read access to the solution and the problem.
ModelNewWorkerOptions evaluation_worker_options(const Candidate& c, const Op& op, int gpu, const fs::path& exec_dir,
                                                const std::string& arch) {
  return {
      gpu, ModelNewWorker::build_dir_for(c.source), exec_dir, {fs::absolute(c.path), fs::absolute(op.reference)}, arch};
}

// A worker started and warmed before its solution's turn (the "warm" request: python3, torch, the
// profiler's CUPTI and CUDA context), none of the solution's code run yet.
class ModelNewAhead : public AheadWork {
 public:
  explicit ModelNewAhead(std::unique_ptr<ModelNewWorker> w) : worker(std::move(w)) {}
  std::unique_ptr<ModelNewWorker> worker;
};

// One solution's evaluation: its worker (and a baseline's) live as long as this does, so they end
// before Evaluator::evaluate settles an out-of-memory failure.
class ModelNewEvaluation : public KindEvaluation {
 public:
  explicit ModelNewEvaluation(EvalContext& ctx) : ctx_(ctx), ref_(*ctx.pytorch) {}

  bool build(EvalReport& rep) override {
    timeout_ = ctx_.timeout();  // one limit for all of this evaluation's requests, from here
    WorkerReply loaded = start_worker(ctx_.candidate, worker_, rep.compile);
    rep.sandbox_warning = worker_->sandbox_warning();
    if (!rep.compile.ok) return false;
    EvalOutcome& o = rep.outcome;
    rep.ran = true;
    o.stop_rule = ctx_.options().stop_rule;
    o.knobs = ctx_.options().knobs;
    if (loaded.failure) {
      fail(o, loaded.failure);
      return false;
    }
    if (loaded.body.contains("static")) note_static_findings(loaded.body["static"], o);
    return true;
  }

  void measure(EvalReport& rep) override {
    EvalOutcome& o = rep.outcome;
    const EvalOptions& opt = ctx_.options();
    const Op& op = ctx_.op;
    harness_ = ctx_.harness_cubin();
    const int trials = opt.trials > 0 ? opt.trials : op.correctness_trials;
    for (int t = 0; t < trials; ++t) {
      if (!run_trial(*worker_, t, "correctness", FailureStage::correctness, o, o)) return;
      o.trials_run = t + 1;
    }
    if (!opt.timing) {
      o.correct = true;
      return;
    }

    nlohmann::json tq = {{"cmd", "time"},
                         {"stop_rule", opt.stop_rule},
                         {"warmup_runs", opt.knobs.warmup_runs},
                         {"warmup_ms", opt.knobs.warmup_ms},
                         {"profile_samples", opt.cupti_check ? opt.knobs.cupti_samples : 0}};
    WorkerReply timed = worker_->request(tq, std::max<std::chrono::milliseconds>(timeout_, 120s), "timing ModelNew");
    if (timed.failure) {
      fail(o, timed.failure);
      return;
    }
    o.candidate_time = timed.body.at("summary").get<TimingSummary>();
    o.flush_bytes = timed.body.value("flush_bytes", int64_t{0});
    std::string torch_failure;
    if (auto t = timed.body.find("trace"); t != timed.body.end())
      torch_failure = read_trace(*t, o.candidate_time->median_ms, opt.torch_ops, o);
    else
      o.cupti.emplace().not_run = "not asked for (--no-cupti-check)";
    if (!judged(o, compare(server_, timed.body, trials - 1, "re-check after timing", false), FailureStage::recheck))
      return;
    o.rechecks = 1;
    if (!run_trial(*worker_, trials, "re-check on fresh inputs after timing", FailureStage::recheck, o, o)) return;
    o.rechecks = 2;
    o.correct = torch_failure.empty();
    if (!o.correct) {
      o.failure_stage = FailureStage::torch_ops;
      o.message = torch_failure;
    }
    std::vector<TensorSpec> moved = op.inputs;  // forward's tensors and the parameters
    note_bandwidth(o, moved, op.outputs);
    if (ctx_.baseline) compare_with_baseline(rep);
  }

 private:
  // A worker for `c`, loaded (built): the reply, or the failure with the build's time.
  WorkerReply start_worker(const Candidate& c, std::unique_ptr<ModelNewWorker>& w, CompileResult& built) {
    const Op& op = ctx_.op;
    const ModelNewWorkerOptions wo = evaluation_worker_options(
        c, op, ctx_.options().gpu, fs::path(ctx_.runner().options().runner_path).parent_path(), ctx_.arch());
    std::error_code ec;
    built.cache_hit = fs::exists(wo.build_dir / "torch_extensions", ec);
    if (&c == &ctx_.candidate)  // a baseline is never started ahead
      if (std::unique_ptr<AheadWork> ahead = ctx_.take_ahead())
        if (auto* started = dynamic_cast<ModelNewAhead*>(ahead.get()); started && started->worker->alive())
          w = std::move(started->worker);  // one that died while it waited is not the solution's doing
    if (!w) w = std::make_unique<ModelNewWorker>(wo);
    const nlohmann::json rq = {{"cmd", "load"},
                               {"problem", fs::absolute(op.reference).string()},
                               {"precision", precision_name(op.precision)},
                               {"seed", ref_.seed},
                               {"gpu", ctx_.options().gpu},
                               {"inputs", ref_.signature.inputs},
                               {"outputs", op.outputs},
                               {"solution", fs::absolute(c.path).string()}};
    const auto t0 = std::chrono::steady_clock::now();
    WorkerReply r = w->request(rq, std::max<std::chrono::milliseconds>(timeout_, 900s), "building " + c.path.string());
    built.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    built.ok = r.failure.kind != WorkerFailure::Kind::build;
    if (!built.ok) built.log = r.failure.message;
    return r;
  }

  // The runner's verdict on a worker's tensors against the server's current trial.
  EvalOutcome compare(const std::vector<IpcTensorRef>& server, const nlohmann::json& body, int trial,
                      const std::string& when, bool first) {
    CompareRequest cr;
    cr.gpu = ctx_.options().gpu;
    cr.harness_cubin_path = harness_;
    cr.tolerance = ctx_.op.tolerance;
    cr.inputs = ref_.signature.inputs;
    cr.outputs = ctx_.op.outputs;
    cr.reference = server;
    cr.candidate = worker_tensors(body);
    cr.trial = trial;
    cr.when = when;
    cr.first_check = first;
    cr.precision_figures = figures_;
    ChildReply rr = ctx_.runner().request(nlohmann::json(cr), timeout_);
    if (!rr.ok())
      throw Error(ExitCode::environment, "kagent-runner failed comparing a solution's outputs: " + rr.message);
    RunnerResult res = rr.body.get<RunnerResult>();
    if (res.environment) throw EnvError(res.error);
    EvalOutcome c;
    if (!res.ok || !res.outcome) {
      // The worker's export did not open: its process is the solution's, so this is the solution's.
      c.failure_stage = FailureStage::crash;
      c.message = res.error;
      c.out_of_memory = res.error.find("CUDA_ERROR_OUT_OF_MEMORY") != std::string::npos;
      return c;
    }
    c = std::move(*res.outcome);
    // Where the reference draws random numbers, wrong outputs are most often other draws: say so.
    if (!c.correct && c.failure_stage == FailureStage::correctness) c.message += draws_hint(ref_.signature.draws, body);
    return c;
  }

  // Folds one comparison into the outcome; false (stage and message set) when it failed.
  static bool judged(EvalOutcome& o, EvalOutcome c, FailureStage stage) {
    o.device = c.device;
    merge_errors(o.errors, c.errors);
    o.flags.insert(o.flags.end(), c.flags.begin(), c.flags.end());
    if (c.correct) return true;
    o.out_of_memory = c.out_of_memory;
    o.failure_stage = c.failure_stage == FailureStage::correctness ? stage : c.failure_stage;
    o.message = c.message;
    o.mismatch = c.mismatch;
    return false;
  }

  // The server's trial inputs into a worker's input buffers, moved by the runner: the server and
  // the worker each have a pid namespace of their own, across which CUDA IPC handles do not open
  // (runner_messages.hpp, CopyRequest). The worker's buffers are asked for once.
  WorkerFailure feed(ModelNewWorker& w, const std::vector<IpcTensorRef>& server_tensors) {
    auto b = buffers_.find(&w);
    if (b == buffers_.end()) {
      WorkerReply r = w.request({{"cmd", "buffers"}}, timeout_, "sharing ModelNew's input buffers");
      if (r.failure) return r.failure;
      b = buffers_.emplace(&w, r.body.at("inputs").get<std::vector<IpcTensorRef>>()).first;
    }
    CopyRequest cp;
    cp.gpu = ctx_.options().gpu;
    cp.from = forward_inputs(server_tensors, ref_.signature.inputs);
    cp.to = b->second;
    ChildReply rr = ctx_.runner().request(nlohmann::json(cp), timeout_);
    if (!rr.ok()) throw Error(ExitCode::environment, "kagent-runner failed copying a trial's inputs: " + rr.message);
    RunnerResult res = rr.body.get<RunnerResult>();
    if (res.environment) throw EnvError(res.error);
    WorkerFailure f;
    if (!res.ok) {  // the worker's buffers did not open or do not fit: its process is the solution's
      f.kind = WorkerFailure::Kind::crash;
      f.message = res.error;
    }
    return f;
  }

  // One trial: fresh inputs from the server, one call of the solution, the runner's verdict, into
  // `into` (the evaluation's outcome o, or the baseline's).
  bool run_trial(ModelNewWorker& w, int t, const std::string& when, FailureStage stage, EvalOutcome& o,
                 EvalOutcome& into) {
    nlohmann::json trial = ctx_.ref_server().trial(fresh_seed());
    server_ = trial.at("tensors").get<std::vector<IpcTensorRef>>();
    if (auto n = trial.find("fp64_note"); n != trial.end() && n->is_string()) o.fp64_note = n->get<std::string>();
    if (auto f = trial.find("precision_figures"); f != trial.end() && f->is_object())
      figures_ = f->get<PrecisionFigures>();
    if (WorkerFailure f = feed(w, server_)) {
      fail(into, f);
      return false;
    }
    WorkerReply r =
        w.request(modelnew_trial_request(trial), timeout_, fmt::format("calling ModelNew ({}, trial {})", when, t));
    if (r.failure) {
      fail(into, r.failure);
      return false;
    }
    if (auto e = r.body.find("shape_error"); e != r.body.end() && e->is_string()) {
      into.failure_stage = stage;
      into.message = fmt::format("{} (trial {}): {}", when, t, e->get<std::string>());
      return false;
    }
    if (&into == &o) return judged(o, compare(server_, r.body, t, when, t == 0 && when == "correctness"), stage);
    EvalOutcome c = compare(server_, r.body, t, when, false);
    into.message = c.message;
    return c.correct;
  }

  // kagent check: the previous version in a worker of its own, checked on the same trial, then
  // sampled in alternation with the candidate (A B, B A, ...).
  void compare_with_baseline(EvalReport& rep) {
    EvalOutcome& o = rep.outcome;
    AbComparison ab;
    std::unique_ptr<ModelNewWorker> base;
    CompileResult base_built;
    WorkerReply bl = start_worker(*ctx_.baseline, base, base_built);
    EvalOutcome base_o;
    if (!base_built.ok) {
      rep.baseline_error = base_built.log;
    } else if (bl.failure) {
      ab.baseline_message = bl.failure.message;
    } else {
      ab.baseline_correct = run_trial(*base, 0, "baseline", FailureStage::correctness, o, base_o);
      if (!ab.baseline_correct) ab.baseline_message = base_o.message.empty() ? "its outputs differ" : base_o.message;
      // The candidate gets the same inputs as the baseline for the pairs.
      if (WorkerFailure f = feed(*worker_, server_)) {
        fail(o, f);
        return;
      }
      WorkerReply cr = worker_->request({{"cmd", "trial"}}, timeout_, "calling ModelNew on the baseline's inputs");
      if (cr.failure) {
        fail(o, cr.failure);
        return;
      }
      // A failed sample ends the pairs: the candidate's failure fails the evaluation, the baseline's
      // leaves the comparison not made (check says so).
      std::optional<WorkerFailure> cand_failed;
      auto samples = [&](ModelNewWorker& w, int n, std::vector<double>* into) {
        WorkerReply r = w.request({{"cmd", "sample"}, {"count", n}}, timeout_, "A/B sample");
        if (r.failure) {
          if (&w == worker_.get()) cand_failed = r.failure;
          throw InputError(r.failure.message);  // caught below
        }
        if (into)
          for (double ms : r.body.at("ms")) into->push_back(ms);
      };
      std::vector<double> a, b;
      const auto wall0 = std::chrono::steady_clock::now();
      try {
        samples(*worker_, 4, nullptr);
        samples(*base, 4, nullptr);
        StopDecision d;
        for (int pair = 0; !d.stop; ++pair) {
          if (pair % 2 == 0) {
            samples(*worker_, 1, &a);
            samples(*base, 1, &b);
          } else {
            samples(*base, 1, &b);
            samples(*worker_, 1, &a);
          }
          ab.ratio = paired_ratio(a, b);
          d = ab_should_stop(ab.ratio, std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count(),
                             ctx_.options().ab_rule);
          ab.stop_reason = d.reason;
        }
        ab.candidate_ms = summarize(a).median_ms;
        ab.baseline_ms = summarize(b).median_ms;
      } catch (const InputError& e) {
        if (cand_failed) {
          fail(o, *cand_failed);
          return;
        }
        ab.baseline_correct = false;
        ab.baseline_message = fmt::format("the baseline's A/B sampling stopped: {}", e.what());
      }
    }
    o.ab = ab;
  }

  EvalContext& ctx_;
  const PyTorchReference& ref_;
  std::chrono::milliseconds timeout_{0};
  std::unique_ptr<ModelNewWorker> worker_;
  std::string harness_;                      // kagent's kernels, for the runner's comparisons
  std::vector<IpcTensorRef> server_;         // the server's tensors of the last trial
  std::optional<PrecisionFigures> figures_;  // the server's figures at the forbidden precisions
  std::map<const ModelNewWorker*, std::vector<IpcTensorRef>> buffers_;  // each worker's input buffers
};

class ModelNewKind : public CandidateKind {
 public:
  std::string_view name() const override { return "modelnew"; }
  std::string_view noun() const override { return "a ModelNew solution"; }
  std::vector<std::string> extensions() const override { return {".py"}; }

  // The one check kagent makes of a solution without Python (its worker checks the rest when it
  // imports it): a top-level class (column 0), as KernelBench imports it: `ModelNew` inside a
  // function or a string does not count.
  Candidate parse(std::string source, const fs::path& path) const override {
    static const std::regex modelnew(R"((^|\n)class[ \t]+ModelNew\b)");
    std::smatch m;
    if (!std::regex_search(source, m, modelnew))
      throw InputError(fmt::format(
          "{}: defines no ModelNew: a KernelBench solution file defines a top-level class ModelNew(nn.Module) that "
          "takes the reference Model's constructor arguments and forward arguments",
          path.string()));
    Candidate cand;
    cand.kind = std::string(name());
    cand.path = path;
    cand.plan_line = line_of_offset(source, static_cast<size_t>(m.position(0)) + m[1].length());
    cand.source = std::move(source);
    return cand;
  }

  CompileResult compile(const Candidate& cand, const Op*, const Compiler&, const std::string&) const override {
    throw InputError(
        fmt::format("{}: a ModelNew solution is built by its own worker when it is evaluated (kagent eval "
                    "{} --op PROBLEM.py), not compiled by NVRTC",
                    cand.path.string(), cand.path.string()));
  }
  bool compiles_before_evaluation() const override { return false; }

  // The solution imported by a worker that has no GPU, so that its load_inline extensions (and
  // whatever else its import builds) are in its build folder before its evaluation's worker, which
  // imports it again, starts. A solution whose import needs the GPU fails here and is built by its
  // evaluation instead.
  void prebuild(const Candidate& cand, const Compiler&, const std::string& arch) const override {
    ModelNewWorkerOptions wo;
    wo.build_dir = ModelNewWorker::build_dir_for(cand.source);
    wo.exec_dir = self_dir();
    wo.read_only = {fs::absolute(cand.path)};
    wo.arch = arch;
    wo.gpu_access = false;
    ModelNewWorker worker(wo);
    WorkerReply r = worker.request({{"cmd", "build"}, {"solution", fs::absolute(cand.path).string()}}, 900s,
                                   "building " + cand.path.string() + " ahead of its evaluation");
    if (r.failure) throw Error(ExitCode::failed, r.failure.message);
  }

  bool starts_ahead() const override { return true; }
  std::unique_ptr<AheadWork> start_ahead(const Candidate& cand, const Op& op, const AheadOptions& o) const override {
    auto worker = std::make_unique<ModelNewWorker>(evaluation_worker_options(cand, op, o.gpu, o.exec_dir, o.arch));
    WorkerReply r = worker->request({{"cmd", "warm"}, {"gpu", o.gpu}}, 120s, "starting a ModelNew worker ahead");
    if (r.failure) throw Error(ExitCode::environment, r.failure.message);
    return std::make_unique<ModelNewAhead>(std::move(worker));
  }

  std::unique_ptr<KindEvaluation> evaluation(EvalContext& ctx) const override {
    if (ctx.pytorch == nullptr)
      throw InputError(
          fmt::format("{}: a ModelNew solution is scored against a PyTorch reference (a KernelBench "
                      "problem file), and {} is a native CUDA reference",
                      ctx.candidate.path.string(), ctx.op.reference.string()));
    return std::make_unique<ModelNewEvaluation>(ctx);
  }
};

}  // namespace

const CandidateKind& modelnew_kind() {
  static const ModelNewKind kind;
  return kind;
}

}  // namespace kagent
