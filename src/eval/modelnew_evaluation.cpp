// Evaluator::evaluate for the ModelNew kind of candidate: a KernelBench-style .py solution, built
// and run by its own sandboxed worker (modelnew_worker.hpp), its outputs compared by kagent-runner
// (the "compare" request), and the result the same EvalReport a plan gets, so the reward, the
// records, the reports, check and bench do not know which kind they got.
//
// The protocol, in the order it runs:
//   load      the worker imports the problem, snapshots the harness, imports the solution (the
//             build: load_inline, Triton), builds ModelNew under the reference's seed. Outside the
//             GPU lock; a build error is a compile failure (tier -1) with the compiler's message.
//   trials    per trial a fresh seed: the reference server makes inputs and outputs (and fp64
//             twins); the worker copies the inputs in by CUDA IPC, calls ModelNew once, exports its
//             outputs and its input tensors; the runner compares both with the server's.
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

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "fresh_seed.hpp"
#include "kagent/common/error.hpp"
#include "kagent/eval/drawn_inputs.hpp"
#include "kagent/eval/evaluator.hpp"
#include "kagent/eval/modelnew_worker.hpp"
#include "kagent/protocol/runner_messages.hpp"

namespace kagent {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

namespace {

constexpr double kTorchShareLimit = 0.5;  // torch_ops: PyTorch's kernels carry more than half the time

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

// The profiler's view of the samples (trace.py) as the CUPTI cross-check and its flags.
void read_trace(const nlohmann::json& t, double median_ms, bool allow_torch_ops, EvalOutcome& o) {
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

  const double share = t.value("torch_share", 0.0);
  const int custom = t.value("custom_kernels", 0);
  std::string ops;
  const nlohmann::json torch_ops = member(t, "torch_ops", nlohmann::json::object());
  for (auto it = torch_ops.begin(); it != torch_ops.end(); ++it)
    ops += fmt::format("{}{} {:.1f}%", ops.empty() ? "" : ", ", it.key(),
                       c.kernel_ms > 0 ? 100.0 * it.value().get<double>() / 1e3 / c.kernel_ms : 0.0);
  if (ops.empty()) return;
  const bool mostly_torch = share > kTorchShareLimit || (custom == 0 && c.launches_seen > 0);
  const std::string what = fmt::format(
      "{:.0f}% of the kernel time is PyTorch's own operators ({}); the solution's own kernels ran {} time(s)",
      100 * share, ops, custom);
  if (mostly_torch && !allow_torch_ops)
    o.flags.push_back({FlagKind::torch_ops, "", share, kTorchShareLimit, what + " (--allow-torch-ops permits it)"});
  else
    o.flags.push_back({FlagKind::note, "", share, kTorchShareLimit, "PyTorch ops ran: " + what});
}

}  // namespace

EvalReport Evaluator::evaluate_modelnew(const ResolvedOp& resolved, const Candidate& cand, EvalMode mode,
                                        const Candidate* baseline) {
  require_gpu();
  (void)mode;  // the profile's per-launch breakdown and counters are the plan kind's; the trace stands in
  const Op& op_in = resolved.op;
  if (op_in.ref_kind == RefKind::cuda)
    throw InputError(
        fmt::format("{}: a ModelNew solution is scored against a PyTorch reference (a KernelBench "
                    "problem file), and {} is a native CUDA reference",
                    cand.path.string(), op_in.reference.string()));
  if (baseline && baseline->kind != CandidateKind::modelnew)
    throw InputError(fmt::format("{}: the baseline of a ModelNew solution must be a ModelNew solution too, not {}",
                                 cand.path.string(), baseline->path.string()));
  EvalReport rep;
  rep.candidate = cand.path.string();
  rep.op = op_in.name;
  rep.arch = arch_;
  rep.precision = op_in.precision;
  rep.tolerance = op_in.tolerance;
  const PyTorchReference& ref = pytorch_reference(op_in);
  const Op& op = ref.op;
  if (opt_.timing) measure_torch_baselines();
  note_torch_baselines(rep);

  auto timeout = opt_.timeout;
  if (deadline_) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(*deadline_ - std::chrono::steady_clock::now());
    timeout = std::min(opt_.timeout, std::max(left, std::chrono::milliseconds(1000)));
  }
  const nlohmann::json load = {{"cmd", "load"},
                               {"problem", fs::absolute(op.reference).string()},
                               {"precision", precision_name(op.precision)},
                               {"seed", ref.seed},
                               {"gpu", opt_.gpu},
                               {"inputs", ref.signature.inputs},
                               {"outputs", op.outputs}};
  // A worker for `c`, loaded (built): the reply, or the failure with the build's time.
  auto start_worker = [&](const Candidate& c, std::unique_ptr<ModelNewWorker>& w, CompileResult& built) {
    ModelNewWorkerOptions wo{opt_.gpu,
                             ModelNewWorker::build_dir_for(c.source),
                             fs::path(runner_->options().runner_path).parent_path(),
                             {fs::absolute(c.path), fs::absolute(op.reference)}};
    std::error_code ec;
    built.cache_hit = fs::exists(wo.build_dir / "torch_extensions", ec);
    w = std::make_unique<ModelNewWorker>(wo);
    nlohmann::json rq = load;
    rq["solution"] = fs::absolute(c.path).string();
    const auto t0 = std::chrono::steady_clock::now();
    WorkerReply r = w->request(rq, std::max<std::chrono::milliseconds>(timeout, 900s), "building " + c.path.string());
    built.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    built.ok = r.failure.kind != WorkerFailure::Kind::build;
    if (!built.ok) built.log = r.failure.message;
    return r;
  };

  std::unique_ptr<ModelNewWorker> worker;
  WorkerReply loaded = start_worker(cand, worker, rep.compile);
  rep.sandbox_warning = worker->sandbox_warning();
  if (!rep.compile.ok) {
    rep.reward = compute_reward(false, false, std::nullopt, rep.baselines);
    return rep;
  }
  EvalOutcome& o = rep.outcome;
  rep.ran = true;
  o.stop_rule = opt_.stop_rule;
  o.knobs = opt_.knobs;
  auto finish = [&] {
    std::optional<double> cand_ms;
    if (o.correct && o.candidate_time) cand_ms = o.candidate_time->median_ms;
    rep.reward = compute_reward(true, o.correct, cand_ms, rep.baselines, o.flags);
    return rep;
  };
  if (loaded.failure) {
    fail(o, loaded.failure);
    return finish();
  }
  if (loaded.body.contains("static")) note_static_findings(loaded.body["static"], o);

  GpuLock lock = lock_gpu("evaluating " + cand.path.filename().string());
  const std::string harness = harness_cubin();
  // The runner's verdict on a worker's tensors against the server's current trial.
  auto compare = [&](const std::vector<IpcTensorRef>& server, const nlohmann::json& body, int trial,
                     const std::string& when, bool first) -> EvalOutcome {
    CompareRequest cr;
    cr.gpu = opt_.gpu;
    cr.harness_cubin_path = harness;
    cr.tolerance = op.tolerance;
    cr.inputs = ref.signature.inputs;
    cr.outputs = op.outputs;
    cr.reference = server;
    cr.candidate = worker_tensors(body);
    cr.trial = trial;
    cr.when = when;
    cr.first_check = first;
    RunnerReply rr = runner_->request(nlohmann::json(cr), timeout);
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
    if (!c.correct && c.failure_stage == FailureStage::correctness) c.message += draws_hint(ref.signature.draws, body);
    return c;
  };
  // Folds one comparison into the outcome; false (stage and message set) when it failed.
  auto judged = [&](EvalOutcome c, FailureStage stage) {
    o.device = c.device;
    merge_errors(o.errors, c.errors);
    o.flags.insert(o.flags.end(), c.flags.begin(), c.flags.end());
    if (c.correct) return true;
    o.out_of_memory = c.out_of_memory;
    o.failure_stage = c.failure_stage == FailureStage::correctness ? stage : c.failure_stage;
    o.message = c.message;
    o.mismatch = c.mismatch;
    return false;
  };
  // The server's trial inputs into a worker's input buffers, moved by the runner: the server and
  // the worker each have a pid namespace of their own, across which CUDA IPC handles do not open
  // (runner_messages.hpp, CopyRequest). The worker's buffers are asked for once.
  std::map<const ModelNewWorker*, std::vector<IpcTensorRef>> buffers;
  auto feed = [&](ModelNewWorker& w, const std::vector<IpcTensorRef>& server_tensors) -> WorkerFailure {
    auto b = buffers.find(&w);
    if (b == buffers.end()) {
      WorkerReply r = w.request({{"cmd", "buffers"}}, timeout, "sharing ModelNew's input buffers");
      if (r.failure) return r.failure;
      b = buffers.emplace(&w, r.body.at("inputs").get<std::vector<IpcTensorRef>>()).first;
    }
    CopyRequest cp;
    cp.gpu = opt_.gpu;
    cp.from = forward_inputs(server_tensors, ref.signature.inputs);
    cp.to = b->second;
    RunnerReply rr = runner_->request(nlohmann::json(cp), timeout);
    if (!rr.ok()) throw Error(ExitCode::environment, "kagent-runner failed copying a trial's inputs: " + rr.message);
    RunnerResult res = rr.body.get<RunnerResult>();
    if (res.environment) throw EnvError(res.error);
    WorkerFailure f;
    if (!res.ok) {  // the worker's buffers did not open or do not fit: its process is the solution's
      f.kind = WorkerFailure::Kind::crash;
      f.message = res.error;
    }
    return f;
  };
  // One trial: fresh inputs from the server, one call of the solution, the runner's verdict.
  std::vector<IpcTensorRef> server;
  auto run_trial = [&](ModelNewWorker& w, int t, const std::string& when, FailureStage stage, EvalOutcome& into) {
    nlohmann::json trial = ref_server_->trial(fresh_seed());
    server = trial.at("tensors").get<std::vector<IpcTensorRef>>();
    if (auto n = trial.find("fp64_note"); n != trial.end() && n->is_string()) o.fp64_note = n->get<std::string>();
    if (WorkerFailure f = feed(w, server)) {
      fail(into, f);
      return false;
    }
    WorkerReply r =
        w.request(modelnew_trial_request(trial), timeout, fmt::format("calling ModelNew ({}, trial {})", when, t));
    if (r.failure) {
      fail(into, r.failure);
      return false;
    }
    if (auto e = r.body.find("shape_error"); e != r.body.end() && e->is_string()) {
      into.failure_stage = stage;
      into.message = fmt::format("{} (trial {}): {}", when, t, e->get<std::string>());
      return false;
    }
    if (&into == &o) return judged(compare(server, r.body, t, when, t == 0 && when == "correctness"), stage);
    EvalOutcome c = compare(server, r.body, t, when, false);
    into.message = c.message;
    return c.correct;
  };

  const int trials = opt_.trials > 0 ? opt_.trials : op.correctness_trials;
  for (int t = 0; t < trials; ++t) {
    if (!run_trial(*worker, t, "correctness", FailureStage::correctness, o)) return finish();
    o.trials_run = t + 1;
  }
  if (!opt_.timing) {
    o.correct = true;
    return finish();
  }

  nlohmann::json tq = {{"cmd", "time"},
                       {"stop_rule", opt_.stop_rule},
                       {"warmup_runs", opt_.knobs.warmup_runs},
                       {"warmup_ms", opt_.knobs.warmup_ms},
                       {"profile_samples", opt_.cupti_check ? opt_.knobs.cupti_samples : 0}};
  WorkerReply timed = worker->request(tq, std::max<std::chrono::milliseconds>(timeout, 120s), "timing ModelNew");
  if (timed.failure) {
    fail(o, timed.failure);
    return finish();
  }
  o.candidate_time = timed.body.at("summary").get<TimingSummary>();
  o.flush_bytes = timed.body.value("flush_bytes", int64_t{0});
  if (auto t = timed.body.find("trace"); t != timed.body.end())
    read_trace(*t, o.candidate_time->median_ms, opt_.allow_torch_ops, o);
  else
    o.cupti.emplace().not_run = "not asked for (--no-cupti-check)";
  if (!judged(compare(server, timed.body, trials - 1, "re-check after timing", false), FailureStage::recheck))
    return finish();
  o.rechecks = 1;
  if (!run_trial(*worker, trials, "re-check on fresh inputs after timing", FailureStage::recheck, o)) return finish();
  o.rechecks = 2;
  o.correct = true;
  std::vector<TensorSpec> moved = op.inputs;  // forward's tensors and the parameters
  note_bandwidth(o, moved, op.outputs);

  if (baseline) {
    // kagent check: the previous version in a worker of its own, checked on the same trial, then
    // sampled in alternation with the candidate (A B, B A, ...).
    AbComparison ab;
    std::unique_ptr<ModelNewWorker> base;
    CompileResult base_built;
    WorkerReply bl = start_worker(*baseline, base, base_built);
    EvalOutcome base_o;
    if (!base_built.ok) {
      rep.baseline_error = base_built.log;
    } else if (bl.failure) {
      ab.baseline_message = bl.failure.message;
    } else {
      ab.baseline_correct = run_trial(*base, 0, "baseline", FailureStage::correctness, base_o);
      if (!ab.baseline_correct) ab.baseline_message = base_o.message.empty() ? "its outputs differ" : base_o.message;
      // The candidate gets the same inputs as the baseline for the pairs.
      if (WorkerFailure f = feed(*worker, server)) {
        fail(o, f);
        return finish();
      }
      WorkerReply cr = worker->request({{"cmd", "trial"}}, timeout, "calling ModelNew on the baseline's inputs");
      if (cr.failure) {
        fail(o, cr.failure);
        return finish();
      }
      // A failed sample ends the pairs: the candidate's failure fails the evaluation, the baseline's
      // leaves the comparison not made (check says so).
      std::optional<WorkerFailure> cand_failed;
      auto samples = [&](ModelNewWorker& w, int n, std::vector<double>* into) {
        WorkerReply r = w.request({{"cmd", "sample"}, {"count", n}}, timeout, "A/B sample");
        if (r.failure) {
          if (&w == worker.get()) cand_failed = r.failure;
          throw InputError(r.failure.message);  // caught below
        }
        if (into)
          for (double ms : r.body.at("ms")) into->push_back(ms);
      };
      std::vector<double> a, b;
      const auto wall0 = std::chrono::steady_clock::now();
      try {
        samples(*worker, 4, nullptr);
        samples(*base, 4, nullptr);
        StopDecision d;
        for (int pair = 0; !d.stop; ++pair) {
          if (pair % 2 == 0) {
            samples(*worker, 1, &a);
            samples(*base, 1, &b);
          } else {
            samples(*base, 1, &b);
            samples(*worker, 1, &a);
          }
          ab.ratio = paired_ratio(a, b);
          d = ab_should_stop(ab.ratio, std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count(),
                             opt_.ab_rule);
          ab.stop_reason = d.reason;
        }
        ab.candidate_ms = summarize(a).median_ms;
        ab.baseline_ms = summarize(b).median_ms;
      } catch (const InputError& e) {
        if (cand_failed) {
          fail(o, *cand_failed);
          return finish();
        }
        ab.baseline_correct = false;
        ab.baseline_message = fmt::format("the baseline's A/B sampling stopped: {}", e.what());
      }
    }
    o.ab = ab;
  }
  return finish();
}

}  // namespace kagent
