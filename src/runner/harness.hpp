#pragma once
// kagent's own kernels (harness_kernels.cu) as host calls: fill a tensor from an init spec and a
// seed, compare an output with the reference output, read one element.
#include <chrono>
#include <cstdint>
#include <map>
#include <string>

#include "device.hpp"
#include "kagent/protocol/guard_bands.hpp"
#include "kagent/spec/op.hpp"

namespace kagent::runner {

struct CompareResult {
  uint64_t mismatches = 0, nan_mismatches = 0, first_bad = 0;
  double max_abs = 0, max_rel = 0;
  double ref_min = 0, ref_max = 0, ref_max_abs = 0;
  double ref_min_abs = 0;       // smallest finite |ref|
  uint64_t ref_zeros = 0;       // reference elements exactly 0
  bool has_fp64 = false;        // compared with an fp64 reference too; the three below then apply
  uint64_t passed_by_fp64 = 0;  // elements outside the tolerance of ref that the fp64 rule passed
  double max_abs_fp64 = 0;      // largest finite |out - ref64|
  double ref_error_fp64 = 0;    // largest finite |ref - ref64|: the reference's own error
  // The whole-output rules' figures (kagent/protocol/output_rules.hpp, WholeOutput).
  double out_min = 0, out_max = 0, out_max_abs = 0;  // the candidate's finite values
  double sq_err = 0, sq_ref = 0;                     // sums of squares where both are finite
  double sq_err64 = 0, sq_ref64 = 0, sq_referr64 = 0;
};

class Harness {
 public:
  // When this runner's last timing pass ended and how long it kept the GPU busy (warm-up
  // included): the next pass's warm-up counts it when it begins within MeasureKnobs::warmup_credit_gap_ms.
  struct LastPass {
    std::chrono::steady_clock::time_point end;
    double busy_ms = 0;
  };
  LastPass last_pass;

  Harness(const Device& dev, const std::string& cubin);
  void fill(CUdeviceptr p, int64_t numel, DType t, const InitSpec& init, uint64_t seed);
  // ref64: the reference computed in float64 (numel doubles), or 0 for none; the element rule is
  // kagent/protocol/compare_rule.hpp's.
  CompareResult compare(CUdeviceptr out, CUdeviceptr ref, int64_t numel, DType t, const Tolerance& tol,
                        CUdeviceptr ref64 = 0);
  // The same comparison queued only, for a check the host reads later (the re-checks during
  // timing): its words land in the kCompareSlotBytes at `slot` (device memory), the candidate's
  // value at the first mismatching index last, in stream order, before anything queued after it
  // can overwrite `out`. decode_compare reads a slot's words once they are on the host.
  static constexpr size_t kCompareSlotBytes = 22 * 8;
  void enqueue_compare(CUdeviceptr slot, CUdeviceptr out, CUdeviceptr ref, int64_t numel, DType t, const Tolerance& tol,
                       CUdeviceptr ref64);
  static CompareResult decode_compare(const uint64_t* words, bool has_fp64, double* first_bad_value);
  double read(CUdeviceptr p, int64_t index, DType t);
  // Reads `bytes` (a multiple of 16) at p: the L2 flush (see kagent_flush).
  void flush(CUdeviceptr p, size_t bytes);
  // The harness kernels' module (a plan of library steps only needs one and asks it for no kernel).
  const Module& module() const { return mod_; }
  // An empty kernel on the stream: a boundary CUPTI sees (see kagent_mark).
  void mark();
  // c = a b for row-major n x n FP32 matrices, n a multiple of 128 (kagent_peak_sgemm): the
  // matrix product that measures the FP32 roof.
  void sgemm(CUdeviceptr a, CUdeviceptr b, CUdeviceptr c, int n);
  // The tensor-core roofs (kagent_peak_mma_*): `blocks` blocks of 256 threads, each warp issuing
  // kMmaChains x iters mma.sync of one kind from registers; returns the FLOPs that is.
  // f64: mma.sync m8n8k4 .f64; dfma: plain FP64 fused multiply-adds (kagent_peak_dfma).
  enum class Mma { tf32, f16, bf16, f64, dfma };
  double mma(Mma kind, int blocks, int iters, CUdeviceptr sink);
  // The memory roofs (kagent_peak_read / _write / _copy): `blocks` blocks of 256 threads streaming
  // n4 float4 from `in` and/or to `out`; returns the bytes that moves (read plus written).
  enum class Stream { read, write, copy };
  double stream(Stream kind, int blocks, CUdeviceptr in, CUdeviceptr out, int64_t n4, CUdeviceptr sink);
  // The guard bands of the allocation at `base` (kagent_guard_fill / kagent_guard_check); the
  // check adds what it finds into the 4 words at `result`, which the caller zeroes. Enqueued only.
  void guard_fill(CUdeviceptr base, const GuardLayout& l, uint64_t seed);
  void guard_check(CUdeviceptr base, const GuardLayout& l, uint64_t seed, CUdeviceptr result);
  // Adds the digest of `bytes` at p (256-byte aligned) into the word at `result`, which the caller
  // zeroes (kagent_digest). Enqueued only.
  void digest(CUdeviceptr p, size_t bytes, uint64_t key, CUdeviceptr result);

 private:
  CUfunction fn(const char* op, DType t);
  CUfunction kernel(const std::string& name);  // looked up once, then remembered
  // How many 256-thread blocks of `f` one SM holds at once (its registers decide), asked once.
  int resident_blocks(CUfunction f);
  void launch(CUfunction f, int64_t numel, void** args);

  const Device& dev_;
  Module mod_;
  std::map<std::string, CUfunction> kernels_;
  std::map<CUfunction, int> resident_;
  DeviceBuffer stats_;  // a compare slot (kCompareSlotBytes), then one double for read()
};

}  // namespace kagent::runner
