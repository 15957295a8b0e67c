// Correctness: the trials, the candidate's outputs against the reference's (and the fp64
// reference's), the re-checks during and after timing, and the flags on a reference that cannot
// tell right from wrong (degenerate, weak).
#include <algorithm>

#include <fmt/format.h>

#include "evaluation_impl.hpp"
#include "ipc_import.hpp"
#include "kagent/protocol/reference_quality.hpp"

namespace kagent::runner {

bool Evaluation::run_trials(PlanExecutor& cand_plan, PlanExecutor* ref_plan, EvalOutcome& o) {
  const bool native = ref_plan != nullptr;
  for (int t = 0; t < rq_.trials; ++t) {
    const std::string ctx = fmt::format("trial {}", t);
    if (native) {
      new_inputs(t);
      bounds_.seal(guarded(pristine_));
      bounds_.unseal(guarded(ref_out_));  // the reference rewrites them
      poison(ref_out_);
      ref_plan->poison_scratch();
      ref_plan->run(true, ctx);
      check_reference_writes("its run for correctness " + ctx);
      bounds_.seal(guarded(ref_out_));
    } else {
      import_trial(t);
      bounds_.seal(guarded(pristine_));
    }
    // The candidate sees untouched inputs and outputs that hold nothing it did not write.
    restore_inputs();
    poison(cand_out_);
    cand_plan.poison_scratch();
    cand_plan.run(true, ctx);
    o.trials_run = t + 1;
    check_candidate_writes("correctness " + ctx);
    const bool match = native ? outputs_match(t, "correctness", o, pointers(ref_out_), {})
                              : match_server_outputs(t, "correctness", t == rq_.trials - 1, o);
    if (!match) {
      o.failure_stage = FailureStage::correctness;
      return false;
    }
  }
  return true;
}

bool Evaluation::match_server_outputs(int trial, const std::string& when, bool keep, EvalOutcome& o) {
  std::vector<IpcTensorRef> refs = refs_of(rq_.outputs), refs64 = fp64_refs_of(rq_.outputs);
  refs.insert(refs.end(), refs64.begin(), refs64.end());
  IpcImport imp(refs);  // one import: a tensor and its twin may share an allocation's handle
  std::vector<CUdeviceptr> server, server64;
  for (const auto& t : rq_.outputs) {
    server.push_back(imp.ptr(t.name));
    const bool has =
        std::any_of(refs64.begin(), refs64.end(), [&](const auto& r) { return r.name == t.name + "@f64"; });
    server64.push_back(has ? imp.ptr(t.name + "@f64") : 0);
  }
  bool ok = outputs_match(trial, when, o, server, server64);
  if (ok && keep) {
    for (size_t i = 0; i < server.size(); ++i)
      check(cu().cuMemcpyDtoDAsync(ref_out_[i].get(), server[i], ref_out_[i].bytes(), dev_.stream()),
            "copy reference outputs");
    // The twins too, for the re-checks, where they fit (with 1 GiB to spare for the timing).
    ref64_out_.clear();
    ref64_out_.resize(server64.size());
    fp64_not_copied_ = false;
    for (size_t i = 0; i < server64.size(); ++i) {
      if (server64[i] == 0) continue;
      const size_t bytes = static_cast<size_t>(rq_.outputs[i].numel()) * 8;
      size_t free = 0, total = 0;
      check(cu().cuMemGetInfo(&free, &total), "cuMemGetInfo");
      if (free < bytes + (size_t(1) << 30)) {
        fp64_not_copied_ = true;
        continue;
      }
      ref64_out_[i] = DeviceBuffer(bytes);
      check(cu().cuMemcpyDtoDAsync(ref64_out_[i].get(), server64[i], bytes, dev_.stream()), "copy fp64 reference");
    }
  }
  dev_.sync();  // before the mappings close
  if (ok && keep) bounds_.seal(guarded(ref_out_));
  return ok;
}

bool Evaluation::recheck_outputs(const std::string& when, EvalOutcome& o) {
  if (fp64_not_copied_) return match_server_outputs(rq_.trials - 1, when, false, o);
  std::vector<CUdeviceptr> ref64(rq_.outputs.size(), 0);
  for (size_t i = 0; i < ref64_out_.size() && i < ref64.size(); ++i) ref64[i] = ref64_out_[i].get();
  return outputs_match(rq_.trials - 1, when, o, pointers(ref_out_), ref64);
}

void Evaluation::flag_degenerate(const TensorSpec& t, const CompareResult& c, EvalOutcome& o) {
  // A reference that is all (near) zero or constant cannot tell a correct kernel from an empty one.
  if (c.ref_max_abs <= 1e-6) {
    o.flags.push_back({FlagKind::degenerate_reference, t.name, c.ref_max_abs, 1e-6,
                       fmt::format("is all (near) zero (max |ref| = {:.3g})", c.ref_max_abs)});
    return;
  }
  if (c.ref_min == c.ref_max) {
    o.flags.push_back(
        {FlagKind::degenerate_reference, t.name, c.ref_min, 0, fmt::format("is constant ({:.6g})", c.ref_min)});
    return;
  }
  // Weaker, but as telling: on most elements, or on all within the tolerance, it cannot either.
  if (auto why = weak_reference(static_cast<uint64_t>(t.numel()), c.ref_zeros, c.ref_min, c.ref_max, c.ref_min_abs,
                                rq_.tolerance))
    o.flags.push_back({FlagKind::weak_reference, t.name, 0, 0, *why});
}

void Evaluation::note_errors(size_t i, const CompareResult& c, bool first_check, EvalOutcome& o) {
  if (o.errors.size() <= i) o.errors.resize(rq_.outputs.size());
  OutputErrors& e = o.errors[i];
  e.tensor = rq_.outputs[i].name;
  e.max_abs = std::max(e.max_abs, c.max_abs);
  if (c.has_fp64) {
    e.max_abs_fp64 = std::max(e.max_abs_fp64.value_or(0.0), c.max_abs_fp64);
    e.ref_error_fp64 = std::max(e.ref_error_fp64.value_or(0.0), c.ref_error_fp64);
    e.passed_by_fp64 = std::max(e.passed_by_fp64, c.passed_by_fp64);
  }
  if (first_check && rq_.outputs[i].numel() > 0)
    e.zero_share = static_cast<double>(c.ref_zeros) / static_cast<double>(rq_.outputs[i].numel());
}

bool Evaluation::outputs_match(int trial, const std::string& when, EvalOutcome& o,
                               const std::vector<CUdeviceptr>& reference, const std::vector<CUdeviceptr>& reference64) {
  if (!fp64_note_.empty()) o.fp64_note = fp64_note_;
  for (size_t i = 0; i < rq_.outputs.size(); ++i) {
    const TensorSpec& t = rq_.outputs[i];
    const CUdeviceptr ref64 = i < reference64.size() ? reference64[i] : 0;
    CompareResult c = h_.compare(cand_out_[i].get(), reference[i], t.numel(), t.dtype, rq_.tolerance, ref64);
    const bool first_check = trial == 0 && when == "correctness";
    if (first_check) flag_degenerate(t, c, o);
    note_errors(i, c, first_check, o);
    if (c.mismatches == 0) continue;
    MismatchReport m;
    m.tensor = t.name;
    m.trial = trial;
    m.when = when;
    m.first_index = c.first_bad;
    m.candidate_value = h_.read(cand_out_[i].get(), static_cast<int64_t>(c.first_bad), t.dtype);
    m.reference_value = h_.read(reference[i], static_cast<int64_t>(c.first_bad), t.dtype);
    m.count = c.mismatches;
    m.nan_count = c.nan_mismatches;
    m.numel = static_cast<uint64_t>(t.numel());
    m.max_abs = c.max_abs;
    m.max_rel = c.max_rel;
    std::string fp64_text;
    if (c.has_fp64) {
      m.reference_fp64_value = h_.read(ref64, static_cast<int64_t>(c.first_bad), DType::f64);
      m.max_abs_fp64 = c.max_abs_fp64;
      m.ref_error_fp64 = c.ref_error_fp64;
      fp64_text = fmt::format(
          "; against the fp64 reference ({:.8g} there): max abs error {:.3g}, the reference's own {:.3g} (an element "
          "within the tolerance of fp64, or no farther from it than the reference, passes)",
          *m.reference_fp64_value, c.max_abs_fp64, c.ref_error_fp64);
    }
    o.mismatch = m;
    o.message = fmt::format(
        "output '{}' differs from the reference ({}, trial {}): {} of {} elements outside atol={:g} rtol={:g} "
        "({} NaN/Inf mismatches); first at index {}: candidate {:.8g}, reference {:.8g}; max abs error {:.3g}, "
        "max rel error {:.3g}{}",
        t.name, when, trial, m.count, m.numel, rq_.tolerance.atol, rq_.tolerance.rtol, m.nan_count, m.first_index,
        m.candidate_value, m.reference_value, m.max_abs, m.max_rel, fp64_text);
    return false;
  }
  return true;
}

}  // namespace kagent::runner
