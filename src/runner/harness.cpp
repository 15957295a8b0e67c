#include "harness.hpp"

#include <algorithm>
#include <cstring>

#include <fmt/format.h>

namespace kagent::runner {

namespace {
constexpr size_t kCompareWords = 21;  // CompareStats in harness_kernels.cu; then the first bad value
static_assert(Harness::kCompareSlotBytes == (kCompareWords + 1) * 8);
constexpr size_t kReadSlot = Harness::kCompareSlotBytes;

// Inverse of ordered_key() in harness_kernels.cu.
double from_key(uint64_t key) {
  uint64_t bits = (key >> 63) ? key & ~(1ull << 63) : ~key;
  double v;
  std::memcpy(&v, &bits, 8);
  return v;
}
}  // namespace

Harness::Harness(const Device& dev, const std::string& cubin) : dev_(dev), mod_(cubin), stats_(kReadSlot + 8) {}

CUfunction Harness::kernel(const std::string& name) {
  auto it = kernels_.find(name);
  if (it != kernels_.end()) return it->second;
  CUfunction f = mod_.function(name);
  if (f == nullptr) throw CudaError(CUDA_ERROR_NOT_FOUND, "harness kernel " + name + " is missing", false);
  return kernels_[name] = f;
}

int Harness::resident_blocks(CUfunction f) {
  auto it = resident_.find(f);
  if (it != resident_.end()) return it->second;
  int n = 0;
  check(cu().cuOccupancyMaxActiveBlocksPerMultiprocessor(&n, f, 256, 0), "occupancy of a harness kernel");
  return resident_[f] = std::max(n, 1);
}

CUfunction Harness::fn(const char* op, DType t) {
  return kernel(fmt::format("kagent_{}_{}", op, dtype_name(t)));
}

void Harness::launch(CUfunction f, int64_t numel, void** args) {
  const int64_t blocks = std::clamp<int64_t>((numel + 255) / 256, 1, int64_t(dev_.summary().sms) * 32);
  check(cu().cuLaunchKernel(f, static_cast<unsigned>(blocks), 1, 1, 256, 1, 1, 0, dev_.stream(), args, nullptr),
        "harness kernel launch");
}

void Harness::fill(CUdeviceptr p, int64_t numel, DType t, const InitSpec& init, uint64_t seed) {
  int kind = static_cast<int>(init.kind);
  double a = init.a, b = init.b;
  void* args[] = {&p, &numel, &seed, &kind, &a, &b};
  launch(fn("fill", t), numel, args);
}

CompareResult Harness::compare(CUdeviceptr out, CUdeviceptr ref, int64_t numel, DType t, const Tolerance& tol,
                               CUdeviceptr ref64) {
  if (!dtype_is_float(t)) ref64 = 0;  // as enqueue_compare does
  enqueue_compare(stats_.get(), out, ref, numel, t, tol, ref64);
  uint64_t w[kCompareWords + 1];
  dev_.sync();
  check(cu().cuMemcpyDtoH(w, stats_.get(), sizeof w), "reading comparison results");
  return decode_compare(w, ref64 != 0, nullptr);
}

void Harness::enqueue_compare(CUdeviceptr slot, CUdeviceptr out, CUdeviceptr ref, int64_t numel, DType t,
                              const Tolerance& tol, CUdeviceptr ref64) {
  if (!dtype_is_float(t)) ref64 = 0;  // only floating outputs have fp64 twins (and compare64 kernels)
  void* init_args[] = {&slot};
  check(cu().cuLaunchKernel(kernel("kagent_compare_init"), 1, 1, 1, 1, 1, 1, 0, dev_.stream(), init_args, nullptr),
        "compare init");
  double atol = tol.atol, rtol = tol.rtol;
  void* args[] = {&out, &ref, &ref64, &numel, &atol, &rtol, &slot};
  // The fp64 twin's comparison is a kernel of its own (harness_kernels.cu, compare: registers).
  CUfunction f = fn(ref64 != 0 ? "compare64" : "compare", t);
  // One wave of the blocks the SMs hold at once, striding over the elements: each block ends with
  // one atomic per statistic on the same cache lines (harness_kernels.cu, compare), so no more
  // blocks than run together, and no second wave whose tail leaves SMs idle.
  const int64_t blocks = std::clamp<int64_t>((numel + 255) / 256, 1, int64_t(dev_.summary().sms) * resident_blocks(f));
  check(cu().cuLaunchKernel(f, static_cast<unsigned>(blocks), 1, 1, 256, 1, 1, 0, dev_.stream(), args, nullptr),
        "compare launch");
  CUdeviceptr value = slot + kCompareWords * 8;
  void* read_args[] = {&out, &slot, &value};
  check(cu().cuLaunchKernel(fn("read_first_bad", t), 1, 1, 1, 1, 1, 1, 0, dev_.stream(), read_args, nullptr),
        "read first mismatch");
}

CompareResult Harness::decode_compare(const uint64_t* w, bool has_fp64, double* first_bad_value) {
  CompareResult r;
  r.mismatches = w[0];
  r.nan_mismatches = w[1];
  r.first_bad = w[2];
  r.max_abs = from_key(w[3]);
  r.max_rel = from_key(w[4]);
  r.ref_min = from_key(w[5]);
  r.ref_max = from_key(w[6]);
  r.ref_max_abs = from_key(w[7]);
  r.has_fp64 = has_fp64;
  r.passed_by_fp64 = w[8];
  r.max_abs_fp64 = from_key(w[9]);
  r.ref_error_fp64 = from_key(w[10]);
  r.ref_zeros = w[11];
  r.ref_min_abs = from_key(w[12]);
  r.out_min = from_key(w[13]);
  r.out_max = from_key(w[14]);
  r.out_max_abs = from_key(w[15]);
  auto sum = [&](size_t i) {
    double v;
    std::memcpy(&v, &w[i], 8);
    return v;
  };
  r.sq_err = sum(16);
  r.sq_ref = sum(17);
  r.sq_err64 = sum(18);
  r.sq_ref64 = sum(19);
  r.sq_referr64 = sum(20);
  if (first_bad_value != nullptr) std::memcpy(first_bad_value, &w[kCompareWords], 8);
  return r;
}

double Harness::read(CUdeviceptr p, int64_t index, DType t) {
  CUdeviceptr slot = stats_.get() + kReadSlot;
  void* args[] = {&p, &index, &slot};
  check(cu().cuLaunchKernel(fn("read", t), 1, 1, 1, 1, 1, 1, 0, dev_.stream(), args, nullptr), "read element");
  dev_.sync();
  double v = 0;
  check(cu().cuMemcpyDtoH(&v, slot, 8), "read element");
  return v;
}

}  // namespace kagent::runner

namespace kagent::runner {

void Harness::flush(CUdeviceptr p, size_t bytes) {
  int64_t n16 = static_cast<int64_t>(bytes / 16);
  unsigned int never = 0;  // with never != 0xFFFFFFFF the store in kagent_flush cannot happen
  CUdeviceptr sink = stats_.get() + kReadSlot;
  void* args[] = {&p, &n16, &never, &sink};
  launch(kernel("kagent_flush"), n16, args);
}

void Harness::mark() {
  check(cu().cuLaunchKernel(kernel("kagent_mark"), 1, 1, 1, 1, 1, 1, 0, dev_.stream(), nullptr, nullptr),
        "kagent_mark launch");
}

void Harness::sgemm(CUdeviceptr a, CUdeviceptr b, CUdeviceptr c, int n) {
  if (n <= 0 || n % 128 != 0) throw PlanError(fmt::format("kagent_peak_sgemm needs n a multiple of 128, not {}", n));
  void* args[] = {&a, &b, &c, &n};
  const auto tiles = static_cast<unsigned>(n / 128);
  check(cu().cuLaunchKernel(kernel("kagent_peak_sgemm"), tiles, tiles, 1, 256, 1, 1, 0, dev_.stream(), args, nullptr),
        "kagent_peak_sgemm launch");
}

double Harness::mma(Mma kind, int blocks, int iters, CUdeviceptr sink) {
  constexpr int kThreads = 256, kChains = 8;  // kMmaChains in harness_kernels.cu
  const char* name = kind == Mma::tf32   ? "kagent_peak_mma_tf32"
                     : kind == Mma::f16  ? "kagent_peak_mma_f16"
                     : kind == Mma::bf16 ? "kagent_peak_mma_bf16"
                     : kind == Mma::f64  ? "kagent_peak_mma_f64"
                                         : "kagent_peak_dfma";
  unsigned int never = 0;  // the result is stored only for 0xFFFFFFFF
  void* args[] = {&iters, &never, &sink};
  check(cu().cuLaunchKernel(kernel(name), static_cast<unsigned>(blocks), 1, 1, kThreads, 1, 1, 0, dev_.stream(), args,
                            nullptr),
        std::string(name) + " launch");
  // FLOPs of one warp's step: an mma.sync's, or 32 lanes' fused multiply-add.
  const double per_mma = kind == Mma::tf32   ? 2.0 * 16 * 8 * 8
                         : kind == Mma::f64  ? 2.0 * 8 * 8 * 4
                         : kind == Mma::dfma ? 2.0 * 32
                                             : 2.0 * 16 * 8 * 16;
  return per_mma * kChains * iters * (kThreads / 32) * double(blocks);
}

double Harness::stream(Stream kind, int blocks, CUdeviceptr in, CUdeviceptr out, int64_t n4, CUdeviceptr sink) {
  long long n = n4;
  unsigned int never = 0xFFFFFFFFu;
  float v = 1.0f;
  void* read_args[] = {&in, &n, &never, &sink};
  void* write_args[] = {&out, &n, &v};
  void* copy_args[] = {&in, &out, &n};
  const char* name = kind == Stream::read    ? "kagent_peak_read"
                     : kind == Stream::write ? "kagent_peak_write"
                                             : "kagent_peak_copy";
  void** args = kind == Stream::read ? read_args : kind == Stream::write ? write_args : copy_args;
  check(cu().cuLaunchKernel(kernel(name), static_cast<unsigned>(blocks), 1, 1, 256, 1, 1, 0, dev_.stream(), args,
                            nullptr),
        std::string(name) + " launch");
  return 16.0 * static_cast<double>(n4) * (kind == Stream::copy ? 2 : 1);
}

void Harness::guard_fill(CUdeviceptr base, const GuardLayout& l, uint64_t seed) {
  auto front = static_cast<int64_t>(l.front), back_offset = static_cast<int64_t>(l.back_offset()),
       back = static_cast<int64_t>(l.back);
  void* args[] = {&base, &front, &back_offset, &back, &seed};
  launch(kernel("kagent_guard_fill"), front + back, args);
}

void Harness::guard_check(CUdeviceptr base, const GuardLayout& l, uint64_t seed, CUdeviceptr result) {
  auto front = static_cast<int64_t>(l.front), back_offset = static_cast<int64_t>(l.back_offset()),
       back = static_cast<int64_t>(l.back);
  void* args[] = {&base, &front, &back_offset, &back, &seed, &result};
  launch(kernel("kagent_guard_check"), front + back, args);
}

void Harness::digest(CUdeviceptr p, size_t bytes, uint64_t key, CUdeviceptr result) {
  auto n = static_cast<int64_t>(bytes);
  void* args[] = {&p, &n, &key, &result};
  launch(kernel("kagent_digest"), std::max<int64_t>(n / 8, 1), args);
}

}  // namespace kagent::runner
