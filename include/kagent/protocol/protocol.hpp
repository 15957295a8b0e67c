#pragma once
// The evaluate request kagent sends to kagent-runner, and the outcome it gets back (see
// child_client.hpp for the framing). Both sides use these types, so the JSON has one definition.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "kagent/protocol/flags.hpp"
#include "kagent/protocol/stats.hpp"
#include "kagent/spec/op.hpp"

namespace kagent {

struct PlanSource {
  std::string name;        // the candidate's path, for messages
  std::string source;      // the .cu text (the runner parses its plan)
  std::string cubin_path;  // compiled by kagent (NVRTC), read by the runner
};

// One tensor of the reference server, shared by CUDA IPC: the allocation's handle (64 bytes as
// hex) and where the tensor lies in it.
struct IpcTensorRef {
  std::string name;
  std::string handle;
  uint64_t offset = 0, bytes = 0;
};

// How the runner gets reference outputs: by running the native reference plan on inputs it makes
// itself, or (PyTorch references) from the reference server, trial by trial. For the latter the
// runner sends {"id": N, "need": "trial", "trial": t} in the middle of an evaluate request, and
// kagent answers {"id": N, "tensors": [IpcTensorRef...]} (inputs, then outputs, by name) or
// {"id": N, "error": "..."}.
enum class ReferenceKind { cuda, pytorch };

struct EvalRequest {
  int gpu = 0;        // the GPU this request is for; a runner serves one GPU and refuses others
  uint64_t seed = 0;  // fresh per evaluation; trial t uses a seed derived from (seed, t)
  int trials = 5;
  Tolerance tolerance;
  std::vector<TensorSpec> inputs, outputs;
  std::vector<ScalarArg> scalars;  // a PyTorch forward's int/float arguments, by name
  ReferenceKind reference_kind = ReferenceKind::cuda;
  PlanSource reference, candidate;  // reference: native references only
  std::string harness_cubin_path;   // kagent's own kernels (src/runner/harness_kernels.cu)
  bool timing = true;
  bool time_reference = true;
  StopRule stop_rule;
  MeasureKnobs knobs;       // warm-up, re-check cadence, CUPTI and per-launch sample counts
  bool per_launch = false;  // also time each launch of the candidate's plan on its own (profile)
  // `kagent check --baseline`: the previous version of the kernel, timed against the candidate in
  // alternation (A B B A ...) after the candidate's own timing.
  std::optional<PlanSource> baseline;
  AbRule ab_rule;
  bool cupti_check = true;  // after timing, check the event timing against CUPTI's kernel records
  bool metrics = false;     // hardware counters per kernel (the profile)
  // Guard bands and seals that catch writes outside the buffers (failure stage "bounds"). Off only
  // to measure what they cost (benchmarks/eval_latency).
  bool guard_checks = true;
};

// The candidate against a baseline kernel, timed in alternation on the same inputs.
struct AbComparison {
  RatioEstimate ratio;                       // candidate / baseline, per adjacent pair
  double candidate_ms = 0, baseline_ms = 0;  // medians of each side's paired samples
  bool baseline_correct = false;             // the baseline's outputs matched the reference
  std::string baseline_message;              // why not, when it did not
  std::string stop_reason;
};

struct DeviceSummary {
  std::string name;
  int cc_major = 0, cc_minor = 0, sms = 0;
  int64_t l2_bytes = 0;
  double peak_gbs = 0;  // from memory clock and bus width
};

struct MismatchReport {
  std::string tensor;
  int trial = 0;
  std::string when;  // "correctness" or "re-check after timing sample N"
  uint64_t first_index = 0;
  double candidate_value = 0, reference_value = 0;
  uint64_t count = 0, nan_count = 0, numel = 0;
  double max_abs = 0, max_rel = 0;  // against the reference at the op's precision
  // With an fp64 reference (PyTorch references, where it fits): its value at first_index, the
  // candidate's largest error against it, and the reference's own largest error against it.
  std::optional<double> reference_fp64_value, max_abs_fp64, ref_error_fp64;
};

// One output over every check of an evaluation (largest values seen): the candidate's error
// against the reference and against the fp64 reference, the reference's own error, and how much
// of the reference can tell a right kernel from a wrong one.
struct OutputErrors {
  std::string tensor;
  double max_abs = 0;                    // candidate vs the reference at the op's precision
  std::optional<double> max_abs_fp64;    // candidate vs the fp64 reference (when there is one)
  std::optional<double> ref_error_fp64;  // the reference's own largest error vs the fp64 reference
  uint64_t passed_by_fp64 =
      0;                  // elements outside the tolerance of the reference, passed by the fp64 rule (one check's most)
  double zero_share = 0;  // share of the reference's elements that are exactly 0 (first trial)
  // The whole-output rules (output_rules.hpp), largest over the checks that had the figures: the
  // candidate's relative L2 error (against the fp64 reference where there is one), the reference's
  // own against fp64, and the precision rule's limit with the forbidden precision that set it, or
  // why the rule did not judge this output.
  std::optional<double> rel_l2, ref_rel_l2_fp64, precision_limit;
  std::string precision_nearest, precision_note;
};

// One launch of a candidate's plan, timed on its own (events between launches, same flush).
struct LaunchTime {
  std::string kernel;
  double median_ms = 0;
  double share = 0;      // of the sum of the launches' medians
  double cupti_ms = -1;  // the kernel's own duration as CUPTI saw it (median); -1 without CUPTI
  // For a library step: the kernels the library ran for it, as CUPTI named them (at most 8).
  std::vector<std::string> library_kernels;
};

// Hardware counters for one kernel of the plan (CUPTI range profiler, the kernel replayed as
// needed): the figures Nsight Compute's speed-of-light section shows.
struct KernelMetrics {
  std::string kernel;
  double duration_ms = 0;    // gpu__time_duration.sum
  double dram_pct = 0;       // dram__throughput.avg.pct_of_peak_sustained_elapsed
  double sm_pct = 0;         // sm__throughput.avg.pct_of_peak_sustained_elapsed
  double occupancy_pct = 0;  // sm__warps_active.avg.pct_of_peak_sustained_active (achieved occupancy)
  double l2_hit_pct = 0;     // lts__t_sector_hit_rate.pct
  double l1_hit_pct = 0;     // l1tex__t_sector_hit_rate.pct
  double dram_bytes = 0;     // dram__bytes.sum: bytes the kernel moved to and from DRAM
  double fp32_flops = 0;     // 2 x FFMA + FADD + FMUL thread instructions (the CUDA cores' FP32 work)
  double tensor_pct = 0;     // sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active
};

// What this GPU reaches, measured by the runner once and cached per GPU (kagent/profile/peaks.hpp):
// the roofline's two roofs, and the tensor cores' rates.
struct DevicePeaks {
  std::string gpu;         // name
  std::string uuid;        // the GPU it was measured on
  std::string method;      // the measurement's version: a new method re-measures
  int64_t copy_bytes = 0;  // the device-to-device copy's size
  double copy_gbs = 0;     // (read + written bytes) / time, median of the samples
  // kagent's streaming kernels over the same bytes (kagent_peak_read / _write / _copy: 16-byte
  // accesses, four in flight per thread), the best grid of each; 0 where not measured.
  double read_gbs = 0, write_gbs = 0, copy_kernel_gbs = 0;
  int gemm_n = 0;                  // the FP32 matrix product: n x n times n x n
  double fp32_gflops = 0;          // 2 n^3 / time, median of the samples: the faster of the two below
  std::string gemm_by;             // which product that is: "cuBLAS" or "kagent_peak_sgemm"
  double cublas_gflops = 0;        // cuBLAS's SGEMM (0: not here, or its product was not FP32)
  double kagent_sgemm_gflops = 0;  // kagent's own register-tiled product
  std::string gemm_note;           // why cuBLAS was not used
  double theoretical_gbs = 0;      // from memory clock and bus width
  double theoretical_gflops = 0;   // SMs x FP32 lanes x 2 x the maximum clock
  // The tensor-core roofs: mma.sync issued from registers by every SM (kagent_peak_mma_*), 2 FLOPs
  // per multiply-add, median of the samples; 0 where not measured (mma_note says why). 3xTF32
  // (three TF32 products per fp32-accurate one) leaves a third of tf32_mma_gflops.
  double tf32_mma_gflops = 0;  // mma.sync.aligned.m16n8k8 .tf32, fp32 accumulators
  double f16_mma_gflops = 0;   // mma.sync.aligned.m16n8k16 .f16, fp32 accumulators
  double bf16_mma_gflops = 0;  // mma.sync.aligned.m16n8k16 .bf16, fp32 accumulators
  double f64_mma_gflops = 0;   // mma.sync.aligned.m8n8k4 .f64 (the FP64 tensor cores)
  double fp64_gflops = 0;      // FP64 fused multiply-adds on the FP64 pipes (no tensor cores)
  std::string mma_note;
  int samples = 0;
  std::string measured_at;  // UTC, ISO 8601 (filled by kagent when it caches the figures)
  bool cached = false;      // read from the cache rather than measured by this process
};

// CUPTI's view of a few extra timed samples of the candidate, after its timing: which kernels ran,
// where, and for how long, against the events' span. Flags come from it when it disagrees.
struct CuptiCheck {
  bool ran = false;
  std::string not_run;  // why not (no libcupti, CUPTI refused)
  int samples = 0;
  int launches_expected = 0;    // samples x the plan's launches
  int launches_seen = 0;        // host-launched kernels on the runner's stream and context, harness aside
  int other_kernels = 0;        // device-launched kernels (the plan launches from the host only)
  int off_stream = 0;           // kernels on another stream or context during the samples
  double event_ms = 0;          // the samples' timed spans, summed
  double kernel_ms = 0;         // the plan kernels' durations, summed
  double kernel_median_ms = 0;  // per sample, the plan kernels' durations summed; the median over samples
  std::string problem;          // empty when CUPTI agrees with the timing
  // Kernels a library step ran on the library's own streams (cuDNN forks grouped convolutions),
  // each inside one sample's window between kagent's harness kernels: the library joined them.
  int library_side_kernels = 0;
};

// Where an evaluation failed. Written by name in JSON: "" (none), "plan", "launch", "correctness",
// "re-check", "bounds" (wrote outside its buffers), "reference" (the server failed, or a native
// reference wrote outside its buffers), "timeout", "crash", "tamper" (a ModelNew solution replaced
// part of the harness: torch.cuda.Event, synchronize, a timer function, the numerics switches),
// "inputs" (a ModelNew solution wrote its inputs).
// torch_ops: a ModelNew solution whose work PyTorch's operators did, under the policy "fail"
// (protocol/torch_ops.hpp).
enum class FailureStage {
  none,
  plan,
  launch,
  correctness,
  recheck,
  bounds,
  reference,
  timeout,
  crash,
  tamper,
  inputs,
  torch_ops,
  precision  // an output nearer a forbidden precision's error than the reference's (output_rules.hpp)
};
std::string_view failure_stage_name(FailureStage s);
std::optional<FailureStage> parse_failure_stage(std::string_view name);

struct EvalOutcome {
  bool correct = false;
  FailureStage failure_stage = FailureStage::none;
  std::string message;  // one paragraph for failures, naming the launch/argument/tensor
  std::optional<MismatchReport> mismatch;
  std::vector<OutputErrors> errors;  // one per output checked, passing or not
  std::string fp64_note;             // PyTorch references: why no fp64 reference was used ("" when one was)
  std::vector<Flag> flags;           // degenerate or weak reference, CUPTI, below the memory floor (flags.hpp)
  std::optional<TimingSummary> candidate_time, reference_time;
  int64_t bytes_moved = 0;
  double memory_floor_ms = 0, achieved_gbs = 0, bandwidth_share = 0;
  std::vector<LaunchTime> launch_times;  // with per_launch
  std::optional<AbComparison> ab;        // with a baseline
  std::optional<CuptiCheck> cupti;       // with cupti_check
  std::vector<KernelMetrics> metrics;  // with metrics, one per launch of the plan (a library step: its kernels summed)
  std::string metrics_note;            // with metrics: why there are none (permissions, another profiler)
  // With metrics, how the counters' pass ran the plan when not as timed: "" as timed; a plan with
  // "graph": true is replayed launch by launch without its graph (CUPTI's kernel replay sees no
  // kernels inside a graph launch), which the profile says.
  std::string metrics_replay;
  // The failure was the GPU running out of memory: the candidate's doing only when nothing else held
  // the GPU's memory (kagent asks NVML; gpu/memory_users.hpp).
  bool out_of_memory = false;
  int trials_run = 0, rechecks = 0;
  int64_t flush_bytes = 0;
  StopRule stop_rule;
  MeasureKnobs knobs;  // what the runner measured with (echoed)
  DeviceSummary device;
};

// Plain records: nlohmann's macro writes their JSON with the field names as keys.
// Every field is required but count_setup, which a rule written before it lacks (false).
void to_json(nlohmann::json& j, const StopRule& r);
void from_json(const nlohmann::json& j, StopRule& r);
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(MeasureKnobs, warmup_runs, warmup_ms, check_every, cupti_samples,
                                                per_launch_samples, warmup_credit_gap_ms)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(TimingSummary, n, median_ms, mean_ms, min_ms, p10_ms, p90_ms, stdev_ms,
                                                rse_median, gpu_time_s, stop_reason, warmup_n, busy_s, wall_s,
                                                warmup_credit_ms, span_s, gap_s, host_wait_s)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(DeviceSummary, name, cc_major, cc_minor, sms, l2_bytes, peak_gbs)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(IpcTensorRef, name, handle, offset, bytes)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(LaunchTime, kernel, median_ms, share, cupti_ms, library_kernels)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(KernelMetrics, kernel, duration_ms, dram_pct, sm_pct, occupancy_pct,
                                                l2_hit_pct, l1_hit_pct, dram_bytes, fp32_flops, tensor_pct)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(DevicePeaks, gpu, uuid, method, copy_bytes, copy_gbs, read_gbs,
                                                write_gbs, copy_kernel_gbs, gemm_n, fp32_gflops, gemm_by, cublas_gflops,
                                                kagent_sgemm_gflops, gemm_note, theoretical_gbs, theoretical_gflops,
                                                tf32_mma_gflops, f16_mma_gflops, bf16_mma_gflops, f64_mma_gflops,
                                                fp64_gflops, mma_note, samples, measured_at, cached)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(CuptiCheck, ran, not_run, samples, launches_expected, launches_seen,
                                                other_kernels, off_stream, library_side_kernels, event_ms, kernel_ms,
                                                kernel_median_ms, problem)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(RatioEstimate, n, median, low, high)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(AbRule, min_pairs, max_pairs, target_width, max_wall_s)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(AbComparison, ratio, candidate_ms, baseline_ms, baseline_correct, baseline_message,
                                   stop_reason)

// Hand-written where the JSON differs from the fields (enums by name, NaN as null, optionals).
void to_json(nlohmann::json& j, const TensorSpec& t);
void from_json(const nlohmann::json& j, TensorSpec& t);
void to_json(nlohmann::json& j, const EvalRequest& r);
void from_json(const nlohmann::json& j, EvalRequest& r);
void to_json(nlohmann::json& j, const MismatchReport& m);
void from_json(const nlohmann::json& j, MismatchReport& m);
void to_json(nlohmann::json& j, const OutputErrors& e);
void from_json(const nlohmann::json& j, OutputErrors& e);
void to_json(nlohmann::json& j, const EvalOutcome& o);
void from_json(const nlohmann::json& j, EvalOutcome& o);

// Bytes moved (every input and output once), the achieved bandwidth at the candidate's median,
// the memory floor at the device's peak, and the below_memory_floor flag when the median is under
// it. Needs o.candidate_time and o.device.
void note_bandwidth(EvalOutcome& o, const std::vector<TensorSpec>& inputs, const std::vector<TensorSpec>& outputs);

// The stopping rule in words, as reports and results records carry it: ">= 20 samples and >= 0.1 s
// GPU time, RSE <= 0.50%; caps 1000 samples, 2 s GPU, 10 s wall".
std::string stop_rule_text(const StopRule& r);

}  // namespace kagent
