// kagent's own device kernels, compiled by NVRTC like a candidate and loaded by kagent-runner:
// input generation (counter-based, so a seed fully determines a tensor and no RNG state lives on
// the GPU) and output comparison (the element rule of kagent/protocol/compare_rule.hpp with the
// optional fp64 reference, NaN/Inf parity, mismatch statistics, the reference's own error, and
// its value range and zeros for the degenerate and weak-reference flags), guard bands and digests
// that catch writes outside the candidate's buffers. Device code only.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

typedef unsigned long long u64;
typedef long long i64;

// ---- random numbers: splitmix64 of (seed, stream, index) ----
__device__ __forceinline__ u64 mix64(u64 z) {
  z += 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}
// Uniform in (0, 1): never exactly 0, so log() in Box-Muller is finite.
__device__ __forceinline__ double u01(u64 seed, u64 stream, u64 i) {
  u64 r = mix64(seed ^ mix64(stream * 0xD1B54A32D192ED03ull + i));
  return ((r >> 11) + 0.5) * (1.0 / 9007199254740992.0);
}

// Init kinds, as kagent::InitSpec::Kind: randn, rand, uniform(a,b), normal(a,b), randint[a,b).
enum { kRandn = 0, kRand = 1, kUniform = 2, kNormal = 3, kRandint = 4 };

__device__ double sample(int kind, double a, double b, u64 seed, u64 i) {
  switch (kind) {
    case kRand:
      return u01(seed, 1, i);
    case kUniform:
      return a + (b - a) * u01(seed, 1, i);
    case kRandint: {
      double lo = a, span = b - a;
      double v = floor(lo + span * u01(seed, 1, i));
      return v < b ? v : b - 1;
    }
    case kRandn:
    case kNormal:
    default: {
      double r = sqrt(-2.0 * log(u01(seed, 1, i)));
      double z = r * cospi(2.0 * u01(seed, 2, i));
      return kind == kNormal ? a + b * z : z;
    }
  }
}

template <typename T>
__device__ __forceinline__ T from_double(double v) {
  return static_cast<T>(v);
}
template <>
__device__ __forceinline__ __half from_double<__half>(double v) {
  return __double2half(v);
}
template <>
__device__ __forceinline__ __nv_bfloat16 from_double<__nv_bfloat16>(double v) {
  return __double2bfloat16(v);
}

template <typename T>
__device__ __forceinline__ double to_double(T v) {
  return static_cast<double>(v);
}
template <>
__device__ __forceinline__ double to_double<__half>(__half v) {
  return static_cast<double>(__half2float(v));
}
template <>
__device__ __forceinline__ double to_double<__nv_bfloat16>(__nv_bfloat16 v) {
  return static_cast<double>(__bfloat162float(v));
}

template <typename T>
__device__ void fill(T* out, i64 n, u64 seed, int kind, double a, double b) {
  for (i64 i = blockIdx.x * (i64)blockDim.x + threadIdx.x; i < n; i += (i64)gridDim.x * blockDim.x)
    out[i] = from_double<T>(sample(kind, a, b, seed, (u64)i));
}

// Booleans ignore the init kind: a fair coin per element, so both values occur.
template <>
__device__ void fill<bool>(bool* out, i64 n, u64 seed, int, double, double) {
  for (i64 i = blockIdx.x * (i64)blockDim.x + threadIdx.x; i < n; i += (i64)gridDim.x * blockDim.x)
    out[i] = u01(seed, 3, (u64)i) < 0.5;
}

// ---- comparison ----
// The element rule, shared with the host (CMake pastes the header here when it embeds this file).
#include "kagent/protocol/compare_rule.hpp"

// Doubles as unsigned keys whose order is the numeric order, for atomicMin/atomicMax.
__device__ __forceinline__ u64 ordered_key(double v) {
  u64 bits = __double_as_longlong(v);
  return (bits >> 63) ? ~bits : bits | 0x8000000000000000ull;
}

// Layout shared with src/runner/harness.cpp (Harness::compare): kCompareWords u64 words.
struct CompareStats {
  u64 mismatches;       // elements outside tolerance, including NaN/Inf parity failures
  u64 nan_mismatches;   // of which NaN or Inf did not match
  u64 first_bad;        // smallest mismatching index (~0 when none)
  u64 max_abs_key;      // ordered_key of the largest finite |out - ref|
  u64 max_rel_key;      // ordered_key of the largest |out - ref| / |ref|
  u64 ref_min_key;      // ordered_key of min(ref), finite values
  u64 ref_max_key;      // ordered_key of max(ref), finite values
  u64 ref_max_abs_key;  // ordered_key of max |ref|
  u64 passed_by_fp64;   // elements outside the tolerance of ref that the fp64 rule passed
  u64 max_abs64_key;    // ordered_key of the largest finite |out - ref64|
  u64 ref_err64_key;    // ordered_key of the largest finite |ref - ref64|: the reference's own error
  u64 ref_zeros;        // elements of ref that are exactly 0
  u64 ref_min_abs_key;  // ordered_key of min |ref|, finite values
  // For the whole-output rules (kagent/protocol/output_rules.hpp): the candidate's finite range,
  // and sums of squares (doubles, added atomically) over the elements where both sides are finite.
  u64 out_min_key;      // ordered_key of min(out), finite values
  u64 out_max_key;      // ordered_key of max(out)
  u64 out_max_abs_key;  // ordered_key of max |out|
  u64 sq_err;           // sum (out - ref)^2
  u64 sq_ref;           // sum ref^2
  u64 sq_err64;         // sum (out - ref64)^2
  u64 sq_ref64;         // sum ref64^2
  u64 sq_referr64;      // sum (ref - ref64)^2
};

// The type a T's values are exact in, for the statistics of the values themselves (ranges, zeros,
// finiteness): float for float and the 16-bit floats, whose FP32 min, max and compare cost a
// fraction of FP64's, double for the rest. Differences, sums of squares and the element rule are
// taken in double whatever T is.
template <typename T>
struct ExactIn {
  using type = double;
};
template <>
struct ExactIn<float> {
  using type = float;
};
template <>
struct ExactIn<__half> {
  using type = float;
};
template <>
struct ExactIn<__nv_bfloat16> {
  using type = float;
};

template <typename T>
__device__ __forceinline__ typename ExactIn<T>::type to_exact(T v) {
  return to_double(v);
}
template <>
__device__ __forceinline__ float to_exact<float>(float v) {
  return v;
}
template <>
__device__ __forceinline__ float to_exact<__half>(__half v) {
  return __half2float(v);
}
template <>
__device__ __forceinline__ float to_exact<__nv_bfloat16>(__nv_bfloat16 v) {
  return __bfloat162float(v);
}

// Minimum, maximum and magnitude of values known not NaN, in their own type: FMNMX or DMNMX.
template <typename V>
__device__ __forceinline__ V min_of(V a, V b) {
  return b < a ? b : a;
}
template <typename V>
__device__ __forceinline__ V max_of(V a, V b) {
  return b > a ? b : a;
}
__device__ __forceinline__ float abs_of(float v) {
  return fabsf(v);
}
__device__ __forceinline__ double abs_of(double v) {
  return fabs(v);
}

// ref64: the reference computed in float64 (kHas64), or ignored: integer outputs, native references,
// none fitted in the server's memory, and every re-check of an output that passes against the
// reference at its own precision (the runner reads ref64 only for one that does not). Two kernels,
// not a branch in one, because registers are allocated for a kernel's widest path: the fp64 twin's
// loads and five more sums would cut how many blocks of the plain comparison an SM holds.
template <typename T, bool kHas64>
__device__ void compare(const T* __restrict__ out, const T* __restrict__ ref, const double* __restrict__ ref64, i64 n,
                        double atol, double rtol, CompareStats* st) {
  using V = typename ExactIn<T>::type;
  // Values of a 4-byte (or narrower) type are exact in float, and no double built from them is
  // subnormal: the guarded division below is exact for them (see there).
  constexpr bool kNarrow = sizeof(V) == 4;
  constexpr bool has64 = kHas64;
  const V inf = V(1.0 / 0.0);
  // Per thread and per warp, counts fit 32 bits (see the shuffles below); the block sums them in 64.
  unsigned bad = 0, nan_bad = 0, by64 = 0, zeros = 0;
  u64 first = ~0ull;
  double max_abs = 0, max_rel = 0;
  V rmin = inf, rmax = -inf, rabs = 0, rminabs = inf;
  double max_abs64 = 0, ref_err64 = 0;
  V omin = inf, omax = -inf, oabs = 0;
  double sq_err = 0, sq_ref = 0, sq_err64 = 0, sq_ref64 = 0, sq_referr64 = 0;
  // One element. `i` is its index, used only where it fails.
  auto add = [&](i64 i, V ov, V rv, double r64) {
    const double o = ov, r = rv;  // exact
    const bool ofin = isfinite(ov), rfin = isfinite(rv);
    // Most elements of most checks are finite and within the tolerance of the reference: the
    // rule's first test (within_tolerance, element_verdict's own) settles them, and element_verdict
    // runs in full only for the rest.
    const int v = ofin && rfin && kagent::within_tolerance(o, r, atol, rtol)
                      ? kagent::kElementPasses
                      : kagent::element_verdict(o, r, r64, has64, atol, rtol);
    if (ofin) {
      omin = min_of(omin, ov);
      omax = max_of(omax, ov);
      oabs = max_of(oabs, abs_of(ov));
    }
    if (ofin && rfin) {
      const double d = fabs(o - r);
      sq_err += d * d;
      sq_ref += r * r;
      if (has64 && isfinite(r64)) {
        sq_err64 += (o - r64) * (o - r64);
        sq_ref64 += r64 * r64;
        sq_referr64 += (r - r64) * (r - r64);
      }
      max_abs = fmax(max_abs, d);
      if (rv != 0) {
        // A double division costs more than the rest of the element: divide only where d / |r|
        // can exceed the largest ratio so far. With d enlarged by 2^-40, d(1 + 2^-40) > max_rel |r|
        // holds for every element whose rounded ratio is above max_rel (each product rounds by at
        // most 2^-53 of itself, and for narrow types no product is subnormal), so max_rel comes
        // out exactly as dividing at every element would make it.
        const double ar = fabs(r);
        if (!kNarrow || d * (1.0 + 0x1p-40) > max_rel * ar) max_rel = fmax(max_rel, d / ar);
      } else if (d > 0) {
        max_rel = 1.0 / 0.0;
      }
    }
    if (has64 && isfinite(r64)) {
      if (ofin) max_abs64 = fmax(max_abs64, fabs(o - r64));
      if (rfin) ref_err64 = fmax(ref_err64, fabs(r - r64));
    }
    if (rfin) {
      rmin = min_of(rmin, rv);
      rmax = max_of(rmax, rv);
      const V a = abs_of(rv);
      rabs = max_of(rabs, a);
      rminabs = min_of(rminabs, a);
    }
    if (rv == 0) ++zeros;
    if (v == kagent::kElementPassesFp64) ++by64;
    if (v == kagent::kElementFails || v == kagent::kElementNanMismatch) {
      ++bad;
      if (v == kagent::kElementNanMismatch) ++nan_bad;
      if ((u64)i < first) first = (u64)i;
    }
  };
  // The elements in chunks of 16 bytes per array, each chunk one vector load (where the arrays are
  // 16-byte aligned: the runner's own buffers are; a ModelNew tensor may start anywhere), kChunks
  // chunks per thread loaded before any is judged so that several loads are in flight; no bounds
  // check or index arithmetic per element. The elements past the last whole chunk, and every
  // element of unaligned arrays, one at a time after. The comparison reads two or three arrays
  // once: how close it comes to the memory's bandwidth is in benchmarks/RESULTS.md, not here.
  constexpr int kVec = 16 / sizeof(T) > 0 ? 16 / sizeof(T) : 1;
  constexpr int kChunks = kVec >= 8 ? 1 : 2;  // at least 8 elements per array in flight; less code for 1-2 byte types
  const i64 threads = (i64)gridDim.x * blockDim.x;
  const i64 tid = blockIdx.x * (i64)blockDim.x + threadIdx.x;
  const bool aligned = ((reinterpret_cast<unsigned long long>(out) | reinterpret_cast<unsigned long long>(ref) |
                         (kHas64 ? reinterpret_cast<unsigned long long>(ref64) : 0ull)) &
                        15ull) == 0;
  i64 tail = 0;  // elements before it are the chunks'
  if (aligned && sizeof(T) <= 16 && 16 % sizeof(T) == 0) {
    const i64 chunks = n / kVec;
    tail = chunks * kVec;
    const uint4* o4 = reinterpret_cast<const uint4*>(out);
    const uint4* r4 = reinterpret_cast<const uint4*>(ref);
    for (i64 c0 = tid; c0 < chunks; c0 += kChunks * threads) {
      uint4 uo[kChunks], ur[kChunks];
      double r64[kChunks][kVec];
#pragma unroll
      for (int k = 0; k < kChunks; ++k) {
        const i64 c = c0 + k * threads;
        if (c < chunks) {
          uo[k] = o4[c];
          ur[k] = r4[c];
#pragma unroll
          for (int j = 0; j < kVec; ++j) r64[k][j] = kHas64 ? ref64[c * kVec + j] : 0.0;
        }
      }
#pragma unroll
      for (int k = 0; k < kChunks; ++k) {
        const i64 c = c0 + k * threads;
        if (c >= chunks) break;
        T o[kVec], r[kVec];
        memcpy(o, &uo[k], sizeof o);
        memcpy(r, &ur[k], sizeof r);
#pragma unroll
        for (int j = 0; j < kVec; ++j) add(c * kVec + j, to_exact(o[j]), to_exact(r[j]), r64[k][j]);
      }
    }
  }
  for (i64 i = tail + tid; i < n; i += threads) add(i, to_exact(out[i]), to_exact(ref[i]), kHas64 ? ref64[i] : 0.0);
  // One atomic per block and statistic: the warp reduces by shuffles, the block through shared
  // memory. The 21 words share three cache lines, whose L2 slice serializes every atomic on them:
  // one per warp was 13 x 33792 atomics for a 16M-element output on the 4224 blocks of 256 threads
  // the other harness kernels get on an H200; the compare's own grid is one wave of the blocks the
  // SMs hold at once (Harness::enqueue_compare), a few hundred blocks.
  for (int off = 16; off > 0; off >>= 1) {
    bad += __shfl_down_sync(0xffffffffu, bad, off);
    nan_bad += __shfl_down_sync(0xffffffffu, nan_bad, off);
    by64 += __shfl_down_sync(0xffffffffu, by64, off);
    zeros += __shfl_down_sync(0xffffffffu, zeros, off);
    // A warp's counts stay under 2^32: an output fits in GPU memory (under 2^38 bytes), and a grid
    // of at least one 256-thread block per SM on a GPU of 16 SMs or more gives a warp under 2^31.
    first = min(first, __shfl_down_sync(0xffffffffu, first, off));
    max_abs = fmax(max_abs, __shfl_down_sync(0xffffffffu, max_abs, off));
    max_rel = fmax(max_rel, __shfl_down_sync(0xffffffffu, max_rel, off));
    rmin = min_of(rmin, __shfl_down_sync(0xffffffffu, rmin, off));
    rmax = max_of(rmax, __shfl_down_sync(0xffffffffu, rmax, off));
    rabs = max_of(rabs, __shfl_down_sync(0xffffffffu, rabs, off));
    rminabs = min_of(rminabs, __shfl_down_sync(0xffffffffu, rminabs, off));
    max_abs64 = fmax(max_abs64, __shfl_down_sync(0xffffffffu, max_abs64, off));
    ref_err64 = fmax(ref_err64, __shfl_down_sync(0xffffffffu, ref_err64, off));
    omin = min_of(omin, __shfl_down_sync(0xffffffffu, omin, off));
    omax = max_of(omax, __shfl_down_sync(0xffffffffu, omax, off));
    oabs = max_of(oabs, __shfl_down_sync(0xffffffffu, oabs, off));
    sq_err += __shfl_down_sync(0xffffffffu, sq_err, off);
    sq_ref += __shfl_down_sync(0xffffffffu, sq_ref, off);
    sq_err64 += __shfl_down_sync(0xffffffffu, sq_err64, off);
    sq_ref64 += __shfl_down_sync(0xffffffffu, sq_ref64, off);
    sq_referr64 += __shfl_down_sync(0xffffffffu, sq_referr64, off);
  }
  __shared__ u64 s_count[5][32];    // bad, nan_bad, by64, zeros, first
  __shared__ double s_val[16][32];  // max_abs, max_rel, rmin, rmax, rabs, rminabs, max_abs64, ref_err64,
                                    // omin, omax, oabs, sq_err, sq_ref, sq_err64, sq_ref64, sq_referr64
  const int warp = threadIdx.x >> 5, warps = (blockDim.x + 31) >> 5;
  if ((threadIdx.x & 31) == 0) {
    s_count[0][warp] = bad, s_count[1][warp] = nan_bad, s_count[2][warp] = by64, s_count[3][warp] = zeros;
    s_count[4][warp] = first;
    s_val[0][warp] = max_abs, s_val[1][warp] = max_rel, s_val[2][warp] = rmin, s_val[3][warp] = rmax;
    s_val[4][warp] = rabs, s_val[5][warp] = rminabs, s_val[6][warp] = max_abs64, s_val[7][warp] = ref_err64;
    s_val[8][warp] = omin, s_val[9][warp] = omax, s_val[10][warp] = oabs, s_val[11][warp] = sq_err;
    s_val[12][warp] = sq_ref, s_val[13][warp] = sq_err64, s_val[14][warp] = sq_ref64, s_val[15][warp] = sq_referr64;
  }
  __syncthreads();
  if (threadIdx.x != 0) return;
  u64 bad_sum = bad, nan_sum = nan_bad, by64_sum = by64, zeros_sum = zeros;
  for (int w = 1; w < warps; ++w) {
    bad_sum += s_count[0][w], nan_sum += s_count[1][w], by64_sum += s_count[2][w], zeros_sum += s_count[3][w];
    first = min(first, s_count[4][w]);
    max_abs = fmax(max_abs, s_val[0][w]), max_rel = fmax(max_rel, s_val[1][w]);
    rmin = min_of(rmin, V(s_val[2][w])), rmax = max_of(rmax, V(s_val[3][w]));
    rabs = max_of(rabs, V(s_val[4][w])), rminabs = min_of(rminabs, V(s_val[5][w]));
    max_abs64 = fmax(max_abs64, s_val[6][w]), ref_err64 = fmax(ref_err64, s_val[7][w]);
    omin = min_of(omin, V(s_val[8][w])), omax = max_of(omax, V(s_val[9][w])), oabs = max_of(oabs, V(s_val[10][w]));
    sq_err += s_val[11][w], sq_ref += s_val[12][w], sq_err64 += s_val[13][w];
    sq_ref64 += s_val[14][w], sq_referr64 += s_val[15][w];
  }
  if (bad_sum) atomicAdd(&st->mismatches, bad_sum);
  if (nan_sum) atomicAdd(&st->nan_mismatches, nan_sum);
  if (by64_sum) atomicAdd(&st->passed_by_fp64, by64_sum);
  if (zeros_sum) atomicAdd(&st->ref_zeros, zeros_sum);
  if (first != ~0ull) atomicMin(&st->first_bad, first);
  atomicMax(&st->max_abs_key, ordered_key(max_abs));
  atomicMax(&st->max_rel_key, ordered_key(max_rel));
  atomicMin(&st->ref_min_key, ordered_key(rmin));
  atomicMax(&st->ref_max_key, ordered_key(rmax));
  atomicMax(&st->ref_max_abs_key, ordered_key(rabs));
  atomicMin(&st->ref_min_abs_key, ordered_key(rminabs));
  atomicMax(&st->max_abs64_key, ordered_key(max_abs64));
  atomicMax(&st->ref_err64_key, ordered_key(ref_err64));
  atomicMin(&st->out_min_key, ordered_key(omin));
  atomicMax(&st->out_max_key, ordered_key(omax));
  atomicMax(&st->out_max_abs_key, ordered_key(oabs));
  atomicAdd(reinterpret_cast<double*>(&st->sq_err), sq_err);
  atomicAdd(reinterpret_cast<double*>(&st->sq_ref), sq_ref);
  if (has64) {
    atomicAdd(reinterpret_cast<double*>(&st->sq_err64), sq_err64);
    atomicAdd(reinterpret_cast<double*>(&st->sq_ref64), sq_ref64);
    atomicAdd(reinterpret_cast<double*>(&st->sq_referr64), sq_referr64);
  }
}

extern "C" __global__ void kagent_compare_init(CompareStats* st) {
  st->mismatches = 0;
  st->nan_mismatches = 0;
  st->first_bad = ~0ull;
  st->max_abs_key = ordered_key(0.0);
  st->max_rel_key = ordered_key(0.0);
  st->ref_min_key = ordered_key(1.0 / 0.0);
  st->ref_max_key = ordered_key(-1.0 / 0.0);
  st->ref_max_abs_key = ordered_key(0.0);
  st->passed_by_fp64 = 0;
  st->max_abs64_key = ordered_key(0.0);
  st->ref_err64_key = ordered_key(0.0);
  st->ref_zeros = 0;
  st->ref_min_abs_key = ordered_key(1.0 / 0.0);
  st->out_min_key = ordered_key(1.0 / 0.0);
  st->out_max_key = ordered_key(-1.0 / 0.0);
  st->out_max_abs_key = ordered_key(0.0);
  st->sq_err = st->sq_ref = st->sq_err64 = st->sq_ref64 = st->sq_referr64 = 0;  // the bits of 0.0
}

// One element as a double, for the mismatch report (works for every dtype, no host conversion).
template <typename T>
__device__ void read_element(const T* p, i64 i, double* out) {
  *out = to_double(p[i]);
}

// The element at a comparison's first mismatching index (0 when none), queued right after the
// comparison: a re-check read later by the host still reports the value the candidate wrote there,
// though the next samples have overwritten the outputs by then.
template <typename T>
__device__ void read_first_bad(const T* p, const CompareStats* st, double* out) {
  *out = st->first_bad == ~0ull ? 0.0 : to_double(p[st->first_bad]);
}

// The L2 flush before each timed sample: 16-byte loads over a buffer of twice the L2. Reading,
// not writing: a written buffer leaves the L2 full of dirty lines, and the timed plan then pays
// their write-back to DRAM (about 10 us on an H100, measured against Nsight Compute, whatever the
// kernel's length). After a read sweep the L2 holds only clean lines that cost nothing to evict,
// the state ncu's cache control gives. The sum is stored only under a condition that never holds
// (`never` is not a value the loads can produce), so the loads cannot be optimised away.
extern "C" __global__ void kagent_flush(const uint4* p, i64 n16, unsigned int never, unsigned int* sink) {
  unsigned int acc = 0;
  for (i64 i = blockIdx.x * (i64)blockDim.x + threadIdx.x; i < n16; i += (i64)gridDim.x * blockDim.x) {
    uint4 v = p[i];
    acc ^= v.x ^ v.y ^ v.z ^ v.w;
  }
  if (acc == never && never == 0xFFFFFFFFu) *sink = acc;
}

// Does nothing: launched between the plan's launches during per-launch timing, outside the events
// around each, so that CUPTI's records can be split launch by launch (a library step runs kernels
// of the library's choosing, how many is not known in advance).
extern "C" __global__ void kagent_mark() {}

// ---- writes outside the buffers (src/runner/bounds_check.cpp) ----
// A guarded allocation is [front band][data][back band] (kagent/protocol/guard_bands.hpp). A band
// byte holds a canary derived from the evaluation's seed and the byte's address: it varies with the
// offset and from buffer to buffer (so bytes copied from one buffer's band into another's, as by
// out[i] = x[i] one element too far, differ from it), and it is never 0x00 or 0xFF, so zeros, the
// 0xFF poison and most common constants (any value with a zero byte: 0, 1, 1.0f = 00 00 80 3F,
// 2.0f, ...) always differ from it.
__device__ __forceinline__ unsigned char guard_byte(u64 seed, const unsigned char* at) {
  const u64 a = (u64)at;
  const u64 r = mix64(seed ^ mix64(a >> 3));
  return (unsigned char)(1 + ((r >> (8 * (a & 7))) & 0xFF) % 254);
}

// Band byte j (0 <= j < front + back) as an offset in the allocation.
__device__ __forceinline__ i64 band_offset(i64 j, i64 front, i64 back_offset) {
  return j < front ? j : back_offset + (j - front);
}

extern "C" __global__ void kagent_guard_fill(unsigned char* base, i64 front, i64 back_offset, i64 back, u64 seed) {
  for (i64 j = blockIdx.x * (i64)blockDim.x + threadIdx.x; j < front + back; j += (i64)gridDim.x * blockDim.x) {
    const i64 k = band_offset(j, front, back_offset);
    base[k] = guard_byte(seed, base + k);
  }
}

// result (4 words, zeroed before): [0] ~distance of the damaged front byte nearest the data (the
// largest key is the smallest distance; 0: none), [1] damaged front bytes, [2] and [3] the same
// for the back band (distance 0 is the byte right at the data's end).
extern "C" __global__ void kagent_guard_check(const unsigned char* base, i64 front, i64 back_offset, i64 back, u64 seed,
                                              u64* result) {
  u64 front_key = 0, front_count = 0, back_key = 0, back_count = 0;
  for (i64 j = blockIdx.x * (i64)blockDim.x + threadIdx.x; j < front + back; j += (i64)gridDim.x * blockDim.x) {
    const i64 k = band_offset(j, front, back_offset);
    if (base[k] == guard_byte(seed, base + k)) continue;
    if (j < front) {
      front_key = max(front_key, ~(u64)(front - k));
      ++front_count;
    } else {
      back_key = max(back_key, ~(u64)(k - back_offset));
      ++back_count;
    }
  }
  for (int off = 16; off > 0; off >>= 1) {
    front_key = max(front_key, __shfl_down_sync(0xffffffffu, front_key, off));
    front_count += __shfl_down_sync(0xffffffffu, front_count, off);
    back_key = max(back_key, __shfl_down_sync(0xffffffffu, back_key, off));
    back_count += __shfl_down_sync(0xffffffffu, back_count, off);
  }
  if ((threadIdx.x & 31) == 0 && (front_count | back_count)) {
    if (front_count) {
      atomicMax(&result[0], front_key);
      atomicAdd(&result[1], front_count);
    }
    if (back_count) {
      atomicMax(&result[2], back_key);
      atomicAdd(&result[3], back_count);
    }
  }
}

// A digest of the bytes only the harness writes (pristine inputs, reference outputs), taken when
// it writes them and compared later: one pass over the bytes, one word back. Each 8-byte word is
// mixed with its index and the key (a bijection of the word, so changing one word always changes
// its term) and the terms are summed, in any order.
__device__ __forceinline__ u64 digest_term(u64 w, u64 key, u64 i) {
  u64 h = (w ^ (key + i * 0x9E3779B97F4A7C15ull)) * 0xBF58476D1CE4E5B9ull;
  return h ^ (h >> 31);
}

extern "C" __global__ void kagent_digest(const unsigned char* p, i64 bytes, u64 key, u64* result) {
  const u64* words = (const u64*)p;  // p is an allocation's data: 256-byte aligned
  const i64 n8 = bytes >> 3;
  const i64 tid = blockIdx.x * (i64)blockDim.x + threadIdx.x;
  u64 acc = 0;
  for (i64 i = tid; i < n8; i += (i64)gridDim.x * blockDim.x) acc += digest_term(words[i], key, (u64)i);
  if (tid == 0 && (bytes & 7)) {  // the last bytes of a size that is not a multiple of 8
    u64 tail = 0;
    for (i64 r = 0; r < (bytes & 7); ++r) tail |= (u64)p[n8 * 8 + r] << (8 * r);
    acc += digest_term(tail, key, (u64)n8);
  }
  for (int off = 16; off > 0; off >>= 1) acc += __shfl_down_sync(0xffffffffu, acc, off);
  if ((threadIdx.x & 31) == 0 && acc) atomicAdd(result, acc);
}

// ---- the FP32 roof: a register-tiled matrix product (src/runner/peaks.cpp times it) ----
// C = A B for row-major n x n matrices, n a multiple of 128. A block of 256 threads computes a
// 128 x 128 tile of C; each thread an 8 x 8 sub-tile made of four 4 x 4 quadrants 64 rows and
// columns apart, so that its shared-memory reads are float4 and free of bank conflicts. A's tile is
// stored transposed (k-major), both tiles are double-buffered: the next 8-wide slice of k is read
// from global memory while this one is multiplied, with one barrier per slice: 64 FFMAs per four
// shared-memory loads (46 TFLOP/s at 8192^3 on the H100, 0.9x cuBLAS). The roof where cuBLAS
// cannot be loaded; a check of cuBLAS's product (that it is FP32, not TF32) where it can.
extern "C" __global__ void __launch_bounds__(256)
    kagent_peak_sgemm(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C, int n) {
  __shared__ __align__(16) float As[2][8][128];
  __shared__ __align__(16) float Bs[2][8][128];
  const int tid = threadIdx.x;
  const int tx = tid & 15, ty = tid >> 4;
  const int a_row = tid >> 1, a_col = (tid & 1) * 4;   // A's 128 x 8 tile: one float4 per thread
  const int b_row = tid >> 5, b_col = (tid & 31) * 4;  // B's 8 x 128 tile: one float4 per thread
  const float* a_ptr = A + (size_t)(blockIdx.y * 128 + a_row) * n + a_col;
  const float* b_ptr = B + (size_t)b_row * n + blockIdx.x * 128 + b_col;

  float acc[8][8];
#pragma unroll
  for (int i = 0; i < 8; ++i)
#pragma unroll
    for (int j = 0; j < 8; ++j) acc[i][j] = 0.f;

  float4 a_next = *reinterpret_cast<const float4*>(a_ptr);
  float4 b_next = *reinterpret_cast<const float4*>(b_ptr);
  As[0][a_col + 0][a_row] = a_next.x;
  As[0][a_col + 1][a_row] = a_next.y;
  As[0][a_col + 2][a_row] = a_next.z;
  As[0][a_col + 3][a_row] = a_next.w;
  *reinterpret_cast<float4*>(&Bs[0][b_row][b_col]) = b_next;
  __syncthreads();

  int buf = 0;
  for (int k0 = 8; k0 <= n; k0 += 8) {
    const bool more = k0 < n;
    if (more) {
      a_next = *reinterpret_cast<const float4*>(a_ptr + k0);
      b_next = *reinterpret_cast<const float4*>(b_ptr + (size_t)k0 * n);
    }
#pragma unroll
    for (int k = 0; k < 8; ++k) {
      float a[8], b[8];
      *reinterpret_cast<float4*>(a) = *reinterpret_cast<const float4*>(&As[buf][k][ty * 4]);
      *reinterpret_cast<float4*>(a + 4) = *reinterpret_cast<const float4*>(&As[buf][k][64 + ty * 4]);
      *reinterpret_cast<float4*>(b) = *reinterpret_cast<const float4*>(&Bs[buf][k][tx * 4]);
      *reinterpret_cast<float4*>(b + 4) = *reinterpret_cast<const float4*>(&Bs[buf][k][64 + tx * 4]);
#pragma unroll
      for (int i = 0; i < 8; ++i)
#pragma unroll
        for (int j = 0; j < 8; ++j) acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
    }
    if (more) {
      buf ^= 1;  // the other buffer was last read before the previous barrier: free to overwrite
      As[buf][a_col + 0][a_row] = a_next.x;
      As[buf][a_col + 1][a_row] = a_next.y;
      As[buf][a_col + 2][a_row] = a_next.z;
      As[buf][a_col + 3][a_row] = a_next.w;
      *reinterpret_cast<float4*>(&Bs[buf][b_row][b_col]) = b_next;
      __syncthreads();
    }
  }
#pragma unroll
  for (int i = 0; i < 8; ++i) {
    const int row = blockIdx.y * 128 + (i < 4 ? ty * 4 + i : 64 + ty * 4 + (i - 4));
    float* c = C + (size_t)row * n + blockIdx.x * 128;
    *reinterpret_cast<float4*>(c + tx * 4) = make_float4(acc[i][0], acc[i][1], acc[i][2], acc[i][3]);
    *reinterpret_cast<float4*>(c + 64 + tx * 4) = make_float4(acc[i][4], acc[i][5], acc[i][6], acc[i][7]);
  }
}

// ---- the tensor-core roofs: mma.sync issued from registers (src/runner/peaks.cpp times them) ----
// Every warp runs kMmaChains independent accumulator chains of one mma.sync shape for `iters`
// rounds on register operands: no loads, no stores until the end, so the time is the tensor pipe's
// issue rate for that instruction, the ceiling a kernel built on it can approach (one fed from
// shared memory also spends issue slots on ldmatrix/lds and waits on them). The operand values are
// small and derived from the lane, so nothing is a compile-time constant; the sum is stored only
// when `never` is 0xFFFFFFFF, which the host never passes, so no work can be dropped as dead.
// Compiled for every architecture kagent runs on; the instructions exist from sm_80 on (below it
// the kernels are empty), and the host does not launch them there.
enum { kMmaTf32 = 0, kMmaF16 = 1, kMmaBf16 = 2 };
constexpr int kMmaChains = 8;

// One 32-bit operand register: a tf32 value (an fp32 bit pattern), or two f16 / bf16 values.
__device__ __forceinline__ float mma_value(unsigned lane, int i) {
  return 1e-3f * (1.f + (lane + 32u * i) * (1.f / 256.f));
}
template <int Kind>
__device__ __forceinline__ unsigned mma_reg(unsigned lane, int i) {
  if (Kind == kMmaTf32) return __float_as_uint(mma_value(lane, i));
  const unsigned short u = Kind == kMmaF16 ? __half_as_ushort(__float2half(mma_value(lane, i)))
                                           : __bfloat16_as_ushort(__float2bfloat16(mma_value(lane, i)));
  return (unsigned)u | ((unsigned)u << 16);
}

// d += a b: m16n8k8 TF32 (2 x 16 x 8 x 8 = 2048 FLOPs); m16n8k16 FP16 or BF16 (4096 FLOPs).
template <int Kind>
__device__ __forceinline__ void mma_step(float (&d)[4], const unsigned (&a)[4], const unsigned (&b)[2]) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  if (Kind == kMmaTf32)
    asm volatile(
        "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
        "{%0, %1, %2, %3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
  else if (Kind == kMmaF16)
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
        "{%0, %1, %2, %3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
  else
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
        "{%0, %1, %2, %3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
#else
  (void)d;
  (void)a;
  (void)b;
#endif
}

template <int Kind>
__device__ __forceinline__ void peak_mma(int iters, unsigned int never, float* sink) {
  const unsigned lane = threadIdx.x & 31u;
  unsigned a[4], b[2];
#pragma unroll
  for (int i = 0; i < 4; ++i) a[i] = mma_reg<Kind>(lane, i);
#pragma unroll
  for (int i = 0; i < 2; ++i) b[i] = mma_reg<Kind>(lane, i + 4);
  float d[kMmaChains][4];
#pragma unroll
  for (int c = 0; c < kMmaChains; ++c) d[c][0] = d[c][1] = d[c][2] = d[c][3] = 0.f;
  for (int it = 0; it < iters; ++it) {
#pragma unroll
    for (int c = 0; c < kMmaChains; ++c) mma_step<Kind>(d[c], a, b);
  }
  float s = 0.f;
#pragma unroll
  for (int c = 0; c < kMmaChains; ++c) s += d[c][0] + d[c][1] + d[c][2] + d[c][3];
  if (never == 0xFFFFFFFFu) sink[blockIdx.x * blockDim.x + threadIdx.x] = s;
}

extern "C" __global__ void __launch_bounds__(256) kagent_peak_mma_tf32(int iters, unsigned int never, float* sink) {
  peak_mma<kMmaTf32>(iters, never, sink);
}
extern "C" __global__ void __launch_bounds__(256) kagent_peak_mma_f16(int iters, unsigned int never, float* sink) {
  peak_mma<kMmaF16>(iters, never, sink);
}
extern "C" __global__ void __launch_bounds__(256) kagent_peak_mma_bf16(int iters, unsigned int never, float* sink) {
  peak_mma<kMmaBf16>(iters, never, sink);
}

// The FP64 roofs, from registers like the ones above: mma.sync m8n8k4 .f64 (the FP64 tensor cores,
// 2 x 8 x 8 x 4 = 512 FLOPs an instruction, sm_80 on) and DFMA chains on the FP64 pipes (2 FLOPs a
// lane), kMmaChains independent chains per thread. An ill-conditioned operator may need fp64
// accumulation; these are its rates.
extern "C" __global__ void __launch_bounds__(256) kagent_peak_mma_f64(int iters, unsigned int never, float* sink) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  const unsigned lane = threadIdx.x & 31u;
  const double a = 1e-3 * (1.0 + lane / 256.0), b = 1e-3 * (1.0 + (lane + 32u) / 256.0);
  double d[kMmaChains][2];
#pragma unroll
  for (int c = 0; c < kMmaChains; ++c) d[c][0] = d[c][1] = 0.0;
  for (int it = 0; it < iters; ++it) {
#pragma unroll
    for (int c = 0; c < kMmaChains; ++c)
      asm volatile("mma.sync.aligned.m8n8k4.row.col.f64.f64.f64.f64 {%0, %1}, {%2}, {%3}, {%0, %1};\n"
                   : "+d"(d[c][0]), "+d"(d[c][1])
                   : "d"(a), "d"(b));
  }
  double s = 0.0;
#pragma unroll
  for (int c = 0; c < kMmaChains; ++c) s += d[c][0] + d[c][1];
  if (never == 0xFFFFFFFFu) sink[blockIdx.x * blockDim.x + threadIdx.x] = (float)s;
#else
  (void)iters;
  (void)never;
  (void)sink;
#endif
}

extern "C" __global__ void __launch_bounds__(256) kagent_peak_dfma(int iters, unsigned int never, float* sink) {
  const unsigned lane = threadIdx.x & 31u;
  const double m = 1.0 - 1e-9 * lane, add = 1e-9 * (lane + 1u);
  double x[kMmaChains];
#pragma unroll
  for (int c = 0; c < kMmaChains; ++c) x[c] = 1e-3 * (1.0 + c + lane / 256.0);
  for (int it = 0; it < iters; ++it) {
#pragma unroll
    for (int c = 0; c < kMmaChains; ++c) x[c] = fma(x[c], m, add);
  }
  double s = 0.0;
#pragma unroll
  for (int c = 0; c < kMmaChains; ++c) s += x[c];
  if (never == 0xFFFFFFFFu) sink[blockIdx.x * blockDim.x + threadIdx.x] = (float)s;
}

// The memory roofs (peaks.cpp): streaming over n float4 (16-byte accesses) with four independent
// accesses in flight per thread per step, grid-stride, as the fastest elementwise kernels run:
// reading only (a reduction's pattern), writing only (a fill's) and both (a copy's). The read's sum
// is stored only for `never` = 0xFFFFFFFF, which a sum of finite values never has as its bits.
extern "C" __global__ void __launch_bounds__(256)
    kagent_peak_read(const float4* __restrict__ in, i64 n, unsigned int never, float* sink) {
  const i64 stride = (i64)gridDim.x * blockDim.x;
  i64 i = blockIdx.x * (i64)blockDim.x + threadIdx.x;
  float s = 0.f;
  for (; i + 3 * stride < n; i += 4 * stride) {
    const float4 a = in[i], b = in[i + stride], c = in[i + 2 * stride], d = in[i + 3 * stride];
    s += (a.x + a.y + a.z + a.w) + (b.x + b.y + b.z + b.w) + (c.x + c.y + c.z + c.w) + (d.x + d.y + d.z + d.w);
  }
  for (; i < n; i += stride) {
    const float4 a = in[i];
    s += a.x + a.y + a.z + a.w;
  }
  if (__float_as_uint(s) == never) sink[blockIdx.x * blockDim.x + threadIdx.x] = s;
}

extern "C" __global__ void __launch_bounds__(256) kagent_peak_write(float4* __restrict__ out, i64 n, float v) {
  const i64 stride = (i64)gridDim.x * blockDim.x;
  i64 i = blockIdx.x * (i64)blockDim.x + threadIdx.x;
  const float4 x = make_float4(v, v, v, v);
  for (; i + 3 * stride < n; i += 4 * stride) {
    out[i] = x;
    out[i + stride] = x;
    out[i + 2 * stride] = x;
    out[i + 3 * stride] = x;
  }
  for (; i < n; i += stride) out[i] = x;
}

extern "C" __global__ void __launch_bounds__(256)
    kagent_peak_copy(const float4* __restrict__ in, float4* __restrict__ out, i64 n) {
  const i64 stride = (i64)gridDim.x * blockDim.x;
  i64 i = blockIdx.x * (i64)blockDim.x + threadIdx.x;
  for (; i + 3 * stride < n; i += 4 * stride) {
    const float4 a = in[i], b = in[i + stride], c = in[i + 2 * stride], d = in[i + 3 * stride];
    out[i] = a;
    out[i + stride] = b;
    out[i + 2 * stride] = c;
    out[i + 3 * stride] = d;
  }
  for (; i < n; i += stride) out[i] = in[i];
}

// CMP_BLOCKS: the blocks of 256 threads an SM must hold of the plain comparison (its registers
// capped to fit them, where that spills nothing: fp32, the common output, holds 4 at 64 registers
// where it would take 66 and 3 blocks; for other types the cap spills, so 1 leaves them uncapped).
#define KAGENT_DTYPE_KERNELS(T, NAME, CMP_BLOCKS)                                                            \
  extern "C" __global__ void kagent_fill_##NAME(T* out, i64 n, u64 seed, int kind, double a, double b) {     \
    fill<T>(out, n, seed, kind, a, b);                                                                       \
  }                                                                                                          \
  extern "C" __global__ void __launch_bounds__(256, CMP_BLOCKS) kagent_compare_##NAME(                       \
      const T* out, const T* ref, const double* ref64, i64 n, double atol, double rtol, CompareStats* st) {  \
    compare<T, false>(out, ref, ref64, n, atol, rtol, st);                                                   \
  }                                                                                                          \
  extern "C" __global__ void kagent_read_##NAME(const T* p, i64 i, double* out) {                            \
    read_element<T>(p, i, out);                                                                              \
  }                                                                                                          \
  extern "C" __global__ void kagent_read_first_bad_##NAME(const T* p, const CompareStats* st, double* out) { \
    read_first_bad<T>(p, st, out);                                                                           \
  }

// The comparison against the fp64 twin, which only floating outputs have.
#define KAGENT_FP64_TWIN_KERNELS(T, NAME)                                                                    \
  extern "C" __global__ void kagent_compare64_##NAME(const T* out, const T* ref, const double* ref64, i64 n, \
                                                     double atol, double rtol, CompareStats* st) {           \
    compare<T, true>(out, ref, ref64, n, atol, rtol, st);                                                    \
  }

KAGENT_DTYPE_KERNELS(float, f32, 4)
KAGENT_DTYPE_KERNELS(double, f64, 1)
KAGENT_DTYPE_KERNELS(__half, f16, 1)
KAGENT_DTYPE_KERNELS(__nv_bfloat16, bf16, 1)
KAGENT_DTYPE_KERNELS(long long, i64, 1)
KAGENT_DTYPE_KERNELS(int, i32, 1)
KAGENT_DTYPE_KERNELS(short, i16, 1)
KAGENT_DTYPE_KERNELS(signed char, i8, 1)
KAGENT_DTYPE_KERNELS(unsigned char, u8, 1)
KAGENT_DTYPE_KERNELS(bool, bool, 1)
KAGENT_FP64_TWIN_KERNELS(float, f32)
KAGENT_FP64_TWIN_KERNELS(double, f64)
KAGENT_FP64_TWIN_KERNELS(__half, f16)
KAGENT_FP64_TWIN_KERNELS(__nv_bfloat16, bf16)
