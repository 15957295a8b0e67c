#include "kagent/check/run.hpp"

#include <chrono>
#include <mutex>

#include <fmt/format.h>

#include "kagent/common/error.hpp"
#include "kagent/common/files.hpp"
#include "kagent/common/worker_pool.hpp"
#include "kagent/compile/options.hpp"
#include "kagent/eval/candidate_kind.hpp"
#include "kagent/sandbox/process.hpp"
#include "kagent/spec/candidate.hpp"
#include "kagent/spec/op.hpp"

namespace kagent::check {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

std::optional<std::string> source_at_ref(const fs::path& kernel, const std::string& ref, std::string* note) {
  const fs::path dir = fs::absolute(kernel).parent_path();
  const std::string file = kernel.filename().string();
  ProcessResult known =
      run_capture({"git", "-C", dir.string(), "rev-parse", "--verify", "--quiet", ref + "^{commit}"}, 60s);
  if (!known.started) throw InputError("baseline_ref " + ref + ": git is not installed");
  if (known.exit_code != 0)
    throw InputError(
        fmt::format("baseline_ref {}: not a commit in the repository of {} ({})", ref, dir.string(),
                    known.output.empty() ? "unknown ref" : known.output.substr(0, known.output.find('\n'))));
  ProcessResult exists = run_capture({"git", "-C", dir.string(), "cat-file", "-e", ref + ":./" + file}, 60s);
  if (exists.exit_code != 0) {
    if (note) *note = fmt::format("{} does not exist at {} (a new kernel): no regression check", file, ref);
    return std::nullopt;
  }
  ProcessResult show = run_capture({"git", "-C", dir.string(), "show", ref + ":./" + file}, 60s);
  if (show.exit_code != 0) throw InputError(fmt::format("git show {}:./{}: {}", ref, file, show.output));
  if (note) *note = fmt::format("{} at {}", file, ref);
  return show.output;  // stderr is empty on success (run_capture merges the two)
}

void resolve_baselines(std::vector<CheckEntry>& entries) {
  for (auto& e : entries) {
    if (e.t.baseline) {
      e.baseline_source = read_text_file(*e.t.baseline);
      e.baseline_note = e.t.baseline->string();
    } else if (e.t.baseline_ref) {
      e.baseline_source = source_at_ref(e.kernel, *e.t.baseline_ref, &e.baseline_note);
    }
  }
}

namespace {

// One entry on one worker.
Verdict check_one(const CheckEntry& e, const Op& op, Evaluator& ev) {
  Candidate cand;
  try {
    cand = load_candidate(e.kernel);
  } catch (const InputError& err) {
    return unparsable(e, err.what());
  }
  std::optional<Candidate> base;
  if (e.baseline_source) {
    const fs::path name = e.t.baseline ? *e.t.baseline : fs::path(e.kernel.string() + "@" + *e.t.baseline_ref);
    try {
      // The baseline is of the kernel's kind, whatever its name (a git ref's "k.py@HEAD~1").
      base = kind_of(cand).parse(*e.baseline_source, name);
    } catch (const InputError& err) {
      Verdict v = unparsable(e, err.what());
      v.reasons = {"the baseline's launch plan is invalid: " + std::string(err.what())};
      v.diagnostics.clear();  // they point into the old file, not the kernel under review
      return v;
    }
  }
  if (const std::string& no_gpu = ev.gpu_problem(); !no_gpu.empty()) {
    // No GPU: a compile error is still a verdict.
    CompileResult c = ev.compile(cand, op);
    if (!c.ok) {
      EvalReport r;
      r.compile = c;
      return judge(e, r);
    }
    return unchecked(e, no_gpu);
  }
  try {
    CheckEntry judged = e;
    if (!base) judged.t.baseline.reset(), judged.t.baseline_ref.reset();  // new kernel: the other gates only
    Verdict v = judge(judged, ev.evaluate(op, cand, EvalMode::score, base ? &*base : nullptr));
    v.entry = e;
    v.baseline_note = e.baseline_note;
    return v;
  } catch (const EnvError& err) {
    return unchecked(e, err.what());
  } catch (const InputError& err) {
    // The plan does not fit the operator (a tensor it does not have, a wrong argument count).
    return unparsable(e, err.what());
  }
}

}  // namespace

std::vector<Verdict> run_checks(const std::vector<CheckEntry>& entries, const CheckOptions& o,
                                const std::function<void(const Verdict&)>& done) {
  std::vector<Verdict> out(entries.size());
  // The queue's mutex guards `out` and `done` too.
  WorkQueue queue(entries.size(), nullptr);
  std::mutex& mu = queue.mutex();
  auto worker = [&](int gpu) {
    EvalOptions eo = o.eval;
    eo.gpu = gpu;
    Evaluator ev(eo, o.cache);  // finds the GPU on first use: compiles without one
    for (;;) {
      size_t i;
      {
        std::lock_guard<std::mutex> lock(mu);
        std::optional<size_t> taken = queue.take_locked();
        if (!taken) return;
        i = *taken;
      }
      const auto t0 = std::chrono::steady_clock::now();
      Verdict v;
      try {
        Op op = load_op(entries[i].op);
        o.overrides.apply(op);
        v = check_one(entries[i], op, ev);
        v.score.precision = std::string(precision_name(op.precision));
        v.score.tolerance = op.tolerance;
      } catch (const EnvError& err) {
        v = unchecked(entries[i], err.what());
      } catch (const Error& err) {
        v = unchecked(entries[i], err.what());
        if (err.code() == ExitCode::bad_input) v = unparsable(entries[i], err.what());
      }
      v.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      v.gpu = gpu;
      std::lock_guard<std::mutex> lock(mu);
      out[i] = v;
      if (done) done(out[i]);
    }
  };
  run_workers(o.gpus, 1, worker);  // one worker per GPU: each owns its evaluator
  return out;
}

}  // namespace kagent::check
