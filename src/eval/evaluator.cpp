#include "kagent/eval/evaluator.hpp"
#include "kagent/eval/report_score.hpp"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "fresh_seed.hpp"
#include "kagent/common/error.hpp"
#include "kagent/common/files.hpp"
#include "kagent/common/hash.hpp"
#include "kagent/common/text_table.hpp"
#include "kagent/compile/options.hpp"
#include "kagent/eval/candidate_kind.hpp"
#include "kagent/eval/harness_source.hpp"
#include "kagent/gpu/devices.hpp"
#include "kagent/profile/peaks.hpp"
#include "kagent/protocol/runner_messages.hpp"
#include "kagent/sandbox/process.hpp"
#include "kagent/spec/op_overrides.hpp"

namespace kagent {

namespace {

std::string runner_path(const EvalOptions& opt) {
  if (!opt.runner_path.empty()) return opt.runner_path;
  if (const char* r = std::getenv("KAGENT_RUNNER"); r != nullptr && *r != '\0') return r;
  return (std::filesystem::path(self_dir()) / "kagent-runner").string();
}

std::filesystem::path make_work_dir() {
  std::string templ = (std::filesystem::temp_directory_path() / "kagent-eval-XXXXXX").string();
  if (mkdtemp(templ.data()) == nullptr) throw EnvError(fmt::format("cannot create a temporary folder in {}", templ));
  return templ;
}

// Per output: the candidate's largest error against the reference and against the fp64 reference,
// the reference's own error, its share of exact zeros, and the precision rule's figures.
std::string render_errors(const EvalOutcome& o) {
  std::string out;
  for (const auto& e : o.errors) {
    out += fmt::format("errors: '{}': max abs {:.3g} vs the reference", e.tensor, e.max_abs);
    if (e.max_abs_fp64)
      out += fmt::format(", {:.3g} vs fp64 (the reference's own: {:.3g})", *e.max_abs_fp64,
                         e.ref_error_fp64.value_or(0.0));
    if (e.passed_by_fp64 > 0)
      out +=
          fmt::format("; {} element(s) outside the tolerance of the reference passed against fp64", e.passed_by_fp64);
    out += fmt::format("; reference {:.1f}% zeros\n", 100 * e.zero_share);
    if (e.precision_limit)
      out += fmt::format(
          "precision: '{}': relative L2 error {:.3g} vs fp64 (the reference's own: {:.3g}), limit {:.3g} "
          "(nearer {} above it)\n",
          e.tensor, e.rel_l2.value_or(0.0), e.ref_rel_l2_fp64.value_or(0.0), *e.precision_limit, e.precision_nearest);
    else if (!e.precision_note.empty())
      out += fmt::format("precision: '{}': not judged ({})\n", e.tensor, e.precision_note);
  }
  if (!o.fp64_note.empty()) out += fmt::format("fp64 reference: not used ({})\n", o.fp64_note);
  return out;
}

}  // namespace

Evaluator::Evaluator(EvalOptions options, std::shared_ptr<CompileCache> cache)
    : opt_(std::move(options)), compiler_(find_cuda_paths(), cache) {
  cache_dir_ = cache ? cache->dir() : CompileCache::default_dir();
}

Evaluator::~Evaluator() {
  runner_.reset();
  std::error_code ec;
  if (!work_dir_.empty()) std::filesystem::remove_all(work_dir_, ec);
}

void Evaluator::probe() {
  if (probed_) return;
  GpuInventory inv = query_gpus();
  if (inv.gpus.empty()) {
    // Compiling still works: at --arch, else the target every compile-only path uses.
    gpu_problem_ = fmt::format("no GPU to evaluate on: {}", inv.problem);
    arch_ = opt_.arch.empty() ? std::string(kNoGpuArch) : opt_.arch;
    probed_ = true;
    return;
  }
  if (opt_.gpu < 0 || opt_.gpu >= static_cast<int>(inv.gpus.size()))
    throw InputError(fmt::format("--gpu {}: this machine has {} GPU(s)", opt_.gpu, inv.gpus.size()));
  const GpuInfo& g = inv.gpus[static_cast<size_t>(opt_.gpu)];
  gpu_uuid_ = g.uuid;
  gpu_memory_ = g.memory_bytes;
  driver_version_ = inv.driver_version;
  arch_ = opt_.arch.empty() ? arch_for_capability(g.cc_major, g.cc_minor) : opt_.arch;
  check_arch(arch_);
  probed_ = true;
}

void Evaluator::require_gpu() {
  probe();
  if (!gpu_problem_.empty()) throw EnvError(gpu_problem_);
  if (runner_) return;
  work_dir_ = make_work_dir();
  ChildOptions ro;
  ro.runner_path = runner_path(opt_);
  ro.gpu = opt_.gpu;
  runner_ = std::make_unique<ChildClient>(ro);
}

const std::string& Evaluator::gpu_problem() {
  probe();
  return gpu_problem_;
}

const std::string& Evaluator::arch() {
  probe();
  return arch_;
}

CompileResult Evaluator::compile(const Candidate& cand, const Op& op) {
  const CandidateKind& kind = kind_of(cand);
  if (!kind.compiles_before_evaluation()) {
    // Nothing to compile before the GPU: it is built when evaluated (ModelNew: by its worker).
    CompileResult r;
    r.ok = true;
    r.log = fmt::format("{}: built when it is evaluated", kind.noun());
    return r;
  }
  return kind.compile(cand, &op, compiler_, arch());
}

std::string ahead_key(const Candidate& cand, const Op& op) {
  return Hasher()
      .add_field(cand.kind)
      .add_field(std::filesystem::absolute(cand.path).string())
      .add_field(cand.source)
      .add_field(std::filesystem::absolute(op.reference).string())
      .hex();
}

void Evaluator::expect_problem(const Op& op, bool with_baselines) {
  try {
    probe();
    if (!gpu_problem_.empty() || op.ref_kind == RefKind::cuda) return;
    // Its server, context, first run and (for a timed evaluation) baselines, unless it is warm.
    WarmStart s;
    s.op = op;
    if (with_baselines && opt_.timing && !opt_.refresh_baselines && !opt_.baselines) s.baselines = opt_.stop_rule;
    s.gpu_lock = gpu_lock_file();
    WarmProblems& pool = warm_problems();
    pool.set_device(gpu_uuid_, static_cast<uint64_t>(gpu_memory_));
    pool.start_ahead(std::move(s));
  } catch (const std::exception& e) {
    spdlog::debug("{} not started ahead: {}", op.reference.string(), e.what());
  }
}

void Evaluator::expect(const Op& op, const Candidate& cand, size_t count) {
  expect_problem(op, true);
  try {
    const CandidateKind& kind = kind_of(cand);
    if (!kind.starts_ahead()) return;
    probe();
    if (!gpu_problem_.empty()) return;
    if (!ahead_) ahead_ = std::make_unique<AheadSlot>();
    AheadOptions o{opt_.gpu, arch_, std::filesystem::path(runner_path(opt_)).parent_path()};
    ahead_->start(
        ahead_key(cand, op), [&kind, cand, op, o] { return kind.start_ahead(cand, op, o); }, count);
  } catch (const std::exception& e) {
    spdlog::debug("nothing started ahead for {}: {}", cand.path.string(), e.what());
  }
}

WarmProblems& Evaluator::warm_problems() {
  if (!warm_) warm_ = std::make_shared<WarmProblems>(opt_.gpu, WarmLimits{1, 0.5});
  return *warm_;
}

RefServer* Evaluator::ref_server() {
  if (!warm_) return nullptr;
  WarmEntry* e = warm_->current();
  return e ? e->server.get() : nullptr;
}

std::filesystem::path Evaluator::gpu_lock_file() const {
  return gpu_lock_path(cache_dir_, gpu_uuid_, opt_.gpu);
}

ChildClient& Evaluator::runner() {
  require_gpu();
  return *runner_;
}

std::string Evaluator::write_cubin(const CompileResult& r) {
  auto path = work_dir_ / (r.key + ".cubin");
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) write_file_atomic(path, r.cubin);
  return path.string();
}

std::string Evaluator::harness_cubin() {
  CompileResult harness_c = compiler_.compile(harness_kernels(), arch_);
  if (!harness_c.ok) throw Error(ExitCode::environment, "kagent's harness kernels do not compile:\n" + harness_c.log);
  return write_cubin(harness_c);
}

std::optional<DevicePeaks> Evaluator::device_peaks(std::string* why) {
  require_gpu();
  if (peaks_) return peaks_;
  if (!peaks_error_.empty()) {
    if (why) *why = peaks_error_;
    return std::nullopt;
  }
  const auto file = profile::peaks_file(cache_dir_, gpu_uuid_, driver_version_);
  if (!opt_.refresh_peaks)
    if (auto cached = profile::read_peaks(file)) return peaks_ = cached;
  GpuLock lock = lock_gpu("measuring its peaks");
  // Another process may have measured them while this one waited.
  if (!opt_.refresh_peaks)
    if (auto cached = profile::read_peaks(file)) return peaks_ = cached;
  nlohmann::json rq = {{"cmd", "peaks"}, {"gpu", opt_.gpu}, {"harness_cubin_path", harness_cubin()}};
  ChildReply reply = runner_->request(rq, std::chrono::seconds(120));
  std::optional<RunnerResult> result;
  if (!reply.ok())
    peaks_error_ = "measuring the GPU's peaks: " + reply.message;
  else if (result = reply.body.get<RunnerResult>(); !result->ok || !result->peaks)
    peaks_error_ = result->error.empty() ? std::string("measuring the GPU's peaks failed") : result->error;
  if (!peaks_error_.empty()) {
    if (why) *why = peaks_error_;
    return std::nullopt;
  }
  DevicePeaks p = *result->peaks;
  p.uuid = gpu_uuid_;
  try {
    profile::write_peaks(file, p);
  } catch (const std::exception& e) {
    spdlog::warn("the GPU's peaks are measured but cannot be cached: {}", e.what());
  }
  return peaks_ = p;
}

ResolvedOp Evaluator::resolve(const Op& op) {
  if (op.ref_kind == RefKind::cuda) return {op};
  return {pytorch_reference(op).op};
}

const PyTorchReference& Evaluator::pytorch_reference(const Op& op) {
  require_gpu();  // the reference server runs on this GPU
  WarmProblems& pool = warm_problems();
  pool.set_device(gpu_uuid_, static_cast<uint64_t>(gpu_memory_));
  WarmStart s;
  s.op = op;
  s.gpu_lock = gpu_lock_file();  // taken by a start ahead's first run and a spare's first kernels
  // The runner keeps the last evaluation's buffers for the next one of the same tensors; another
  // problem's reference (its tensors, its baselines) needs that memory first.
  s.before_load = [this] {
    if (runner_ && runner_->running()) runner_->request({{"cmd", "release"}}, std::chrono::seconds(30));
  };
  WarmProblems::Use u = pool.use(s);
  loaded_ = &u.entry->ref;
  if (u.state != "current") {
    switch_state_ = u.state;
    switch_wait_s_ = u.waited_s;
  }
  return *loaded_;
}

const RefBaselines& Evaluator::pytorch_baselines(const ResolvedOp& op) {
  pytorch_reference(op.op);
  measure_torch_baselines();
  return *loaded_->baselines;
}

const std::optional<PrecisionFigures>& Evaluator::reference_precision(const ResolvedOp& op) {
  pytorch_reference(op.op);
  if (!loaded_->figures_asked) {
    loaded_->figures_asked = true;
    RefServer& server = *ref_server();
    // The server measures its figures on the first trial of a load and sends them with every later
    // one: the evaluations that follow reuse them.
    const nlohmann::json trial = server.trial(fresh_seed());
    server.release();
    if (auto f = trial.find("precision_figures"); f != trial.end() && f->is_object())
      loaded_->figures = f->get<PrecisionFigures>();
  }
  return loaded_->figures;
}

const RefLibraryTimes& Evaluator::library_times(const ResolvedOp& op) {
  pytorch_reference(op.op);
  if (!loaded_->library_times) {
    RefLibraryTimes t;
    {
      GpuLock lock = lock_gpu("timing the reference's library calls");
      t = ref_server()->library_times(opt_.refresh_baselines);
    }
    time_library_steps(t, loaded_->signature.allow_tf32);
    loaded_->library_times = std::move(t);
  }
  return *loaded_->library_times;
}

namespace {

// The loaded problem's baselines from a shared file (InputError naming the field that differs).
RefBaselines shared_baselines(const BaselinesFile& file, const PyTorchReference& ref) {
  const RefSignature& s = ref.signature;
  BaselineKey key{s.source_hash,   std::string(precision_name(ref.op.precision)),
                  s.allow_tf32,    s.gpu_name,
                  s.torch_version, s.baselines_protocol};
  const BaselineEntry& e = file.find(key, ref.op.reference.string());  // InputError naming what differs
  RefBaselines b;
  b.eager = e.eager;
  b.compile = e.compile;
  b.compile_error = e.compile_error;
  b.allow_tf32 = e.key.allow_tf32;
  b.source = "file:" + file.path().string();
  b.gpu_name = e.key.gpu_name;
  b.torch_version = e.key.torch;
  b.protocol = e.key.protocol;
  b.precision = e.key.precision;
  b.key = e.cache_key;
  return b;
}

}  // namespace

void Evaluator::measure_torch_baselines() {
  if (opt_.baselines) {  // the shared file's, whatever this machine would measure
    loaded_->baselines = shared_baselines(*opt_.baselines, *loaded_);
    return;
  }
  WarmEntry& e = *warm_problems().current();
  const std::string key = baselines_key(opt_.stop_rule);
  const bool refresh = opt_.refresh_baselines && refreshed_.count(e.key) == 0;
  if (auto it = e.baselines.find(key); it != e.baselines.end() && !refresh) {
    loaded_->baselines = it->second;
    return;
  }
  // Under the lock, a process that waited finds the baselines in the server's disk cache.
  GpuLock lock = lock_gpu("timing torch eager and torch.compile");
  loaded_->baselines = e.baselines[key] = e.server->baselines(refresh, opt_.stop_rule);
  if (refresh) refreshed_.insert(e.key);
}

void Evaluator::note_torch_baselines(EvalReport& rep) const {
  if (!loaded_ || !loaded_->baselines) return;
  rep.baselines.eager_ms = loaded_->baselines->eager.median_ms;
  if (loaded_->baselines->compile) rep.baselines.compile_ms = loaded_->baselines->compile->median_ms;
  rep.torch = loaded_->baselines;
}

GpuLock Evaluator::lock_gpu(const std::string& what) const {
  return GpuLock(gpu_lock_file(), [&] {
    spdlog::info("GPU {}: waiting for another kagent measurement on it to finish ({})", opt_.gpu, what);
  });
}

bool Evaluator::let_idle_problems_go(const std::string& why, const Candidate& cand) {
  if (!warm_ || warm_->evict_idle() == 0) return false;
  spdlog::info("GPU {}: out of memory ({}); the idle problems kept warm are let go and {} is evaluated again", opt_.gpu,
               why, cand.path.filename().string());
  return true;
}

EvalReport Evaluator::evaluate(const Op& op, const Candidate& cand, EvalMode mode, const Candidate* baseline) {
  ResolvedOp resolved;
  try {
    resolved = resolve(op);
  } catch (const GpuBusyError& e) {  // the problem's load did not fit beside the idle ones
    if (!let_idle_problems_go(e.what(), cand)) throw;
    resolved = resolve(op);
  }
  return evaluate(resolved, cand, mode, baseline);
}

EvalReport Evaluator::evaluate(const ResolvedOp& resolved, const Candidate& cand, EvalMode mode,
                               const Candidate* baseline) {
  // Out of GPU memory while idle problems held some: they are let go and the candidate runs again,
  // so what else this GPU keeps warm never decides a verdict.
  auto let_idle_go = [&](const std::string& why) { return let_idle_problems_go(why, cand); };
  EvalReport rep;
  try {
    rep = evaluate_once(resolved, cand, mode, baseline);
  } catch (const GpuBusyError& e) {
    if (!let_idle_go(e.what())) throw;
    rep = evaluate_once(resolve(resolved.op), cand, mode, baseline);
  }
  if (rep.outcome.out_of_memory && let_idle_go(rep.outcome.message))
    rep = evaluate_once(resolve(resolved.op), cand, mode, baseline);
  if (rep.outcome.out_of_memory) settle_out_of_memory(rep);
  return rep;
}

EvalReport Evaluator::evaluate_once(const ResolvedOp& resolved, const Candidate& cand, EvalMode mode,
                                    const Candidate* baseline) {
  const CandidateKind& kind = kind_of(cand);
  if (kind.needs_gpu())
    require_gpu();
  else
    probe();
  if (baseline && baseline->kind != cand.kind)
    throw InputError(fmt::format("{}: the baseline of {} must be {} too, not {}", cand.path.string(), kind.noun(),
                                 kind.noun(), baseline->path.string()));
  const Op& op_in = resolved.op;
  EvalReport rep;
  rep.candidate = cand.path.string();
  rep.op = op_in.name;
  rep.arch = arch_;
  rep.precision = op_in.precision;
  rep.tolerance = op_in.tolerance;
  const bool native = op_in.ref_kind == RefKind::cuda;
  const PyTorchReference* pytorch = native ? nullptr : &pytorch_reference(op_in);
  const Op& op = native ? op_in : pytorch->op;
  // Baselines only matter for a timed evaluation; a correctness check never pays for them.
  if (pytorch && opt_.timing) measure_torch_baselines();
  if (pytorch) note_torch_baselines(rep);
  if (pytorch) {
    rep.problem_state = switch_state_.empty() ? "current" : switch_state_;
    rep.problem_wait_s = switch_wait_s_;
    switch_state_.clear();
    switch_wait_s_ = 0;
  }

  EvalContext ctx(*this, cand, baseline, op, pytorch, mode);
  {
    std::unique_ptr<KindEvaluation> run = kind.evaluation(ctx);
    if (run->build(rep)) {
      {
        GpuLock lock = lock_gpu("evaluating " + cand.path.filename().string());
        run->measure(rep);
      }
      if (native) {
        if (rep.outcome.reference_time) rep.baselines.eager_ms = rep.outcome.reference_time->median_ms;
        rep.baselines.compile_ms = op.compile_baseline_ms;
      }
      // After the lock: measuring the peaks takes it.
      if (mode == EvalMode::profile && kind.profiles_launches() && rep.outcome.correct)
        rep.peaks = device_peaks(&rep.peaks_note);
    }
  }  // the kind's own processes (a ModelNew worker) end here: an out-of-memory failure is settled without them
  std::optional<double> cand_ms;
  if (rep.outcome.candidate_time) cand_ms = rep.outcome.candidate_time->median_ms;
  rep.reward = compute_reward(rep.compile.ok, rep.outcome.correct, cand_ms, rep.baselines, rep.outcome.flags);
  if (const RefServer* server = pytorch ? ref_server() : nullptr;
      server && !server->sandbox_warning().empty() &&
      rep.sandbox_warning.find(server->sandbox_warning()) == std::string::npos)
    rep.sandbox_warning += (rep.sandbox_warning.empty() ? "" : "; ") + server->sandbox_warning();
  return rep;
}

std::chrono::milliseconds Evaluator::timeout_left() const {
  if (!deadline_) return opt_.timeout;
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(*deadline_ - std::chrono::steady_clock::now());
  return std::min(opt_.timeout, std::max(left, std::chrono::milliseconds(1000)));
}

std::string render_report(const EvalReport& r) {
  std::string out;
  const auto& o = r.outcome;
  out += fmt::format("{}  {}  compiled in {:.3f} s{}\n", r.candidate, r.arch, r.compile.seconds,
                     r.compile.cache_hit ? " (cached)" : "");
  if (!r.compile.ok) {
    out += r.compile.log;
    out += fmt::format("\ntier {}: {}\n", r.reward.tier, r.reward.reason);
    return out;
  }
  // A candidate that failed before the runner reached the GPU (a ModelNew that does not load) has
  // no device facts: no line of zeros.
  if (o.device.sms > 0)
    out += fmt::format("device: {} ({} SMs, L2 {} MiB, peak {:.0f} GB/s)\n", o.device.name, o.device.sms,
                       o.device.l2_bytes >> 20, o.device.peak_gbs);
  out += fmt::format(
      "precision: {}{}\n", precision_rule(r.precision, r.tolerance),
      r.torch ? fmt::format(" (torch baselines ran with TF32 {})", r.torch->allow_tf32 ? "on" : "off") : std::string());
  if (o.correct) {
    out +=
        fmt::format("correctness: passed {} trial(s) ({}, {}); outputs re-checked {} time(s) during and after timing\n",
                    o.trials_run, precision_name(r.precision), tolerance_text(r.tolerance), o.rechecks);
  } else {
    out +=
        fmt::format("correctness: FAILED ({})\n  {}\n",
                    o.failure_stage == FailureStage::none ? "unknown" : failure_stage_name(o.failure_stage), o.message);
  }
  out += render_errors(o);
  if (o.candidate_time) {
    TextTable t({"", "median ms", "mean ms", "min ms", "p10 ms", "p90 ms", "stdev ms", "n", "stopped"});
    auto row = [&](const char* who, const TimingSummary& s) {
      t.add_row({who, fmt::format("{:.4f}", s.median_ms), fmt::format("{:.4f}", s.mean_ms),
                 fmt::format("{:.4f}", s.min_ms), fmt::format("{:.4f}", s.p10_ms), fmt::format("{:.4f}", s.p90_ms),
                 fmt::format("{:.4f}", s.stdev_ms), std::to_string(s.n), s.stop_reason});
    };
    row("candidate", *o.candidate_time);
    if (o.reference_time) row(r.reference_time_cached ? "reference*" : "reference", *o.reference_time);
    if (r.torch) {
      const bool earlier = r.torch->source != "measured";  // the cache's or a shared file's
      row(earlier ? "torch eager*" : "torch eager", r.torch->eager);
      if (r.torch->compile) row(earlier ? "torch.compile*" : "torch.compile", *r.torch->compile);
    }
    out += '\n';  // not "\n" + render(): GCC 12 warns falsely (-Wrestrict) on that concatenation inlined here
    out += t.render();
    if (r.reference_time_cached) out += "* timed by an earlier evaluation of this operator in this process\n";
    if (r.torch && r.torch->source.starts_with("file:"))
      out += fmt::format("* from the shared baselines {} (measured on {} with torch {})\n", r.torch->source.substr(5),
                         r.torch->gpu_name, r.torch->torch_version);
    else if (r.torch && r.torch->cached)
      out += "* measured earlier on this GPU and torch version (baseline cache; --refresh-baselines re-measures)\n";
    if (r.torch && !r.torch->compile)
      out += fmt::format("torch.compile: no time ({}); tier 3 is out of reach\n", r.torch->compile_error);
    out += fmt::format("bandwidth: {:.0f} GB/s achieved ({:.1f}% of peak), memory floor {:.4f} ms for {} bytes\n",
                       o.achieved_gbs, 100 * o.bandwidth_share, o.memory_floor_ms, o.bytes_moved);
    out += fmt::format("timing: L2 flush {} MiB before each sample; stop rule: {}\nknobs: {}\n", o.flush_bytes >> 20,
                       stop_rule_text(o.stop_rule), knobs_text(o.knobs));
    // What the candidate's pass cost beside its samples: set-up on the GPU, the host's share.
    if (const TimingSummary& c = *o.candidate_time; c.wall_s > 0)
      out += fmt::format(
          "candidate's timing pass: {} warm-up run(s){}, {} samples of {:.1f} ms kernel time in {:.1f} ms of GPU busy "
          "time (poison and flush included), {:.1f} ms wall (warm-up and re-checks included){}\n",
          c.warmup_n,
          c.warmup_credit_ms > 0
              ? fmt::format(" (with {:.1f} ms of the previous pass's GPU busy time: clocks up)", c.warmup_credit_ms)
              : std::string(),
          c.n, c.gpu_time_s * 1e3, c.busy_s * 1e3, c.wall_s * 1e3,
          c.span_s > 0 ? fmt::format("; sampling spans {:.1f} ms of GPU time ({:.1f} ms between samples), the host "
                                     "waited {:.1f} ms",
                                     c.span_s * 1e3, c.gap_s * 1e3, c.host_wait_s * 1e3)
                       : std::string());
  }
  if (o.cupti && o.cupti->ran)
    out += fmt::format(
        "cupti: {} of {} launches seen on the plan's stream over {} samples; the plan's kernels take {:.4f} ms "
        "(median per sample), the event-timed median {:.4f} ms includes the launch gap{}{}\n",
        o.cupti->launches_seen - o.cupti->off_stream, o.cupti->launches_expected, o.cupti->samples,
        o.cupti->kernel_median_ms, o.candidate_time ? o.candidate_time->median_ms : 0.0,
        o.cupti->library_side_kernels > 0
            ? fmt::format("; {} kernel(s) on the libraries' own streams, inside the samples",
                          o.cupti->library_side_kernels)
            : std::string(),
        o.cupti->problem.empty() ? "" : "; " + o.cupti->problem);
  else if (o.cupti)
    out += "cupti: cross-check not run (" + o.cupti->not_run + ")\n";
  if (o.ab)
    out += fmt::format(
        "vs baseline: {:.4f}x its time (95% CI {:.4f} to {:.4f}; {} alternating pairs, {}): candidate {:.4f} ms, "
        "baseline {:.4f} ms{}\n",
        o.ab->ratio.median, o.ab->ratio.low, o.ab->ratio.high, o.ab->ratio.n, o.ab->stop_reason, o.ab->candidate_ms,
        o.ab->baseline_ms, o.ab->baseline_correct ? "" : "; the baseline is NOT correct: " + o.ab->baseline_message);
  if (!r.baseline_error.empty()) out += "baseline: does not compile\n" + r.baseline_error + "\n";
  for (const auto& f : o.flags) out += fmt::format("flag: {}\n", flag_text(f));
  if (!r.sandbox_warning.empty()) out += fmt::format("warning: {}\n", r.sandbox_warning);
  auto speed = [](const std::optional<double>& s) { return s ? fmt::format("{:.3f}x", *s) : std::string("n/a"); };
  out += fmt::format("speedup: {} vs eager (reference), {} vs compile\n", speed(r.reward.speedup_vs_eager),
                     speed(r.reward.speedup_vs_compile));
  out += fmt::format("tier {}: {}\n", r.reward.tier, r.reward.reason);
  return out;
}

nlohmann::json report_json(const EvalReport& r) {
  nlohmann::json j = {{"candidate", r.candidate},
                      {"op", r.op},
                      {"arch", r.arch},
                      {"precision", precision_name(r.precision)},
                      {"tolerance", r.tolerance},
                      {"compile",
                       {{"ok", r.compile.ok},
                        {"log", r.compile.log},
                        {"seconds", r.compile.seconds},
                        {"cache_hit", r.compile.cache_hit},
                        {"kernels", r.compile.kernels}}},
                      {"tier", r.reward.tier},
                      {"reason", r.reward.reason}};
  j["speedup_vs_eager"] = r.reward.speedup_vs_eager ? nlohmann::json(*r.reward.speedup_vs_eager) : nlohmann::json();
  j["speedup_vs_compile"] =
      r.reward.speedup_vs_compile ? nlohmann::json(*r.reward.speedup_vs_compile) : nlohmann::json();
  j["baselines"] = {
      {"eager_ms", r.baselines.eager_ms ? nlohmann::json(*r.baselines.eager_ms) : nlohmann::json()},
      {"compile_ms", r.baselines.compile_ms ? nlohmann::json(*r.baselines.compile_ms) : nlohmann::json()}};
  if (r.ran) j["outcome"] = r.outcome;
  if (r.torch) {
    j["torch"] = {{"eager", r.torch->eager},
                  {"cached", r.torch->cached},
                  {"source", r.torch->source},
                  {"key", r.torch->key},
                  {"measured_on",
                   {{"gpu_name", r.torch->gpu_name},
                    {"torch", r.torch->torch_version},
                    {"precision", r.torch->precision},
                    {"protocol", r.torch->protocol}}},
                  {"allow_tf32", r.torch->allow_tf32}};
    j["torch"]["compile"] = r.torch->compile ? nlohmann::json(*r.torch->compile) : nlohmann::json();
    if (!r.torch->compile_error.empty()) j["torch"]["compile_error"] = r.torch->compile_error;
  }
  if (!r.sandbox_warning.empty()) j["sandbox_warning"] = r.sandbox_warning;
  if (!r.baseline_error.empty()) j["baseline_error"] = r.baseline_error;
  if (!r.problem_state.empty()) {
    j["problem_state"] = r.problem_state;
    j["problem_wait_s"] = r.problem_wait_s;
  }
  // The same result as every record keeps it (common/score.hpp): what the judge's front ends read.
  j["score"] = report_score(r);
  return j;
}

}  // namespace kagent
