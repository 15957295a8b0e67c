/*kagent
{
  "scratch": {
    "partial": {"dtype": "f64", "shape": ["numel(x)/numel(ln_weight)", 128, 2]},
    "stats":   {"dtype": "f32", "shape": ["numel(x)/numel(ln_weight)", 2]}
  },
  "launch": [
    {"kernel": "ln_partial", "grid": [128, "numel(x)/numel(ln_weight)"], "block": [256],
     "args": ["x", "partial", "i64:numel(ln_weight)"]},
    {"kernel": "ln_finalize", "grid": ["numel(x)/numel(ln_weight)"], "block": [128],
     "args": ["partial", "stats", "i32:128", "i64:numel(ln_weight)"]},
    {"kernel": "ln_apply", "grid": ["max(cdiv(cdiv(numel(ln_weight),4),256), 1)"], "block": [256],
     "args": ["x", "ln_weight", "ln_bias", "stats", "out",
              "i64:numel(x)/numel(ln_weight)", "i64:numel(ln_weight)"]}
  ]
}
*/
// KernelBench level1/40_LayerNorm: out = nn.LayerNorm((64, 256, 256))(x), x [16, 64, 256, 256]
// f32: each of the M = 16 rows of N = 4,194,304 values (16 MB) is normalized with its own
// mean and biased variance, then scaled by ln_weight and shifted by ln_bias (both [N]).
// eps = 1e-5 (nn.LayerNorm's default) is hard-coded.
// Only 16 rows, so one block per row (as a generic kernel does) would use 16 of 132 SMs.
// Instead, three launches:
//   ln_partial:  grid (128, M). 128 blocks per row each reduce an interleaved 1/128 of the
//                row to (sum, sum of squares): float4 loads, fp32 per-thread accumulation
//                (128 values per thread), fp64 across the block; written to `partial`
//                (f64 [M, 128, 2]).
//   ln_finalize: grid M. Combines the 128 partials of a row in fp64 into mean and
//                rstd = 1 / sqrt(var + eps); var = E[x^2] - mean^2 is formed in double from
//                partials accumulated over only 128 values each in fp32, so its cancellation
//                (E[x^2] ~ 0.33, var ~ 0.083 here) stays far below fp32 tolerance. Written to
//                `stats` (f32 [M, 2]).
//   ln_apply:    each thread owns one float4 column j of the normalized shape: it loads
//                weight[j], bias[j] once and applies them to that column of all M rows, so
//                the 32 MB of weight and bias are read once, not once per row.
// Traffic: x is read twice (it is 268 MB, too big to stay in the 50 MB L2 between the two
// reads), out written once, weight and bias read once. Scratch contents on entry are
// undefined: every entry is written before it is read. Scalar paths handle N % 4 != 0 or
// unaligned pointers. 64-bit offsets throughout.

#define EPS 1e-5
#define FULL_MASK 0xffffffffu

__device__ __forceinline__ double warp_sum(double v) {
  for (int off = 16; off > 0; off >>= 1) v += __shfl_xor_sync(FULL_MASK, v, off);
  return v;
}

// Sum of (a, b) over the block (blockDim.x a multiple of 32, at most 1024); the result is
// valid in thread 0. Every thread of the block must call it.
__device__ __forceinline__ void block_sum2(double& a, double& b) {
  __shared__ double sa[32], sb[32];
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, nwarps = blockDim.x / 32;
  a = warp_sum(a);
  b = warp_sum(b);
  if (lane == 0) {
    sa[warp] = a;
    sb[warp] = b;
  }
  __syncthreads();
  if (warp == 0) {
    a = lane < nwarps ? sa[lane] : 0.0;
    b = lane < nwarps ? sb[lane] : 0.0;
    a = warp_sum(a);
    b = warp_sum(b);
  }
}

// partial[row][k] = (sum, sum of squares) over block k's share of row `row` (k = blockIdx.x,
// row = blockIdx.y): the float4s i = k*blockDim.x + t + m*gridDim.x*blockDim.x (t the thread,
// m = 0, 1, ...), so at every step the row's blocks read one contiguous span together.
extern "C" __global__ void __launch_bounds__(256)
ln_partial(const float* __restrict__ x, double* __restrict__ partial, long long N) {
  const long long row = blockIdx.y;
  const float* xr = x + row * N;
  const long long first = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  const long long step = (long long)gridDim.x * blockDim.x;

  float s0 = 0.0f, q0 = 0.0f, s1 = 0.0f, q1 = 0.0f;  // two chains for ILP
  const bool vec = (N % 4 == 0) && (((unsigned long long)x & 15) == 0);
  if (vec) {
    const long long n4 = N / 4;
    const float4* xr4 = reinterpret_cast<const float4*>(xr);
    long long i = first;
    for (; i + step < n4; i += 2 * step) {  // 2 float4 loads in flight per thread
      const float4 a = xr4[i];
      const float4 b = xr4[i + step];
      s0 += (a.x + a.y) + (a.z + a.w);
      q0 += (a.x * a.x + a.y * a.y) + (a.z * a.z + a.w * a.w);
      s1 += (b.x + b.y) + (b.z + b.w);
      q1 += (b.x * b.x + b.y * b.y) + (b.z * b.z + b.w * b.w);
    }
    if (i < n4) {
      const float4 a = xr4[i];
      s0 += (a.x + a.y) + (a.z + a.w);
      q0 += (a.x * a.x + a.y * a.y) + (a.z * a.z + a.w * a.w);
    }
  } else {
    for (long long i = first; i < N; i += step) {
      const float v = xr[i];
      s0 += v;
      q0 += v * v;
    }
  }
  double s = (double)s0 + (double)s1, q = (double)q0 + (double)q1;
  block_sum2(s, q);
  if (threadIdx.x == 0) {
    double* p = partial + (row * gridDim.x + blockIdx.x) * 2;
    p[0] = s;
    p[1] = q;
  }
}

// stats[row] = (mean, rstd) from the P partials of the row. One block per row.
extern "C" __global__ void __launch_bounds__(1024)
ln_finalize(const double* __restrict__ partial, float* __restrict__ stats, int P, long long N) {
  const long long row = blockIdx.x;
  double s = 0.0, q = 0.0;
  for (int k = threadIdx.x; k < P; k += blockDim.x) {
    s += partial[(row * P + k) * 2 + 0];
    q += partial[(row * P + k) * 2 + 1];
  }
  block_sum2(s, q);
  if (threadIdx.x == 0) {
    const double mean = s / (double)N;
    const double var = fmax(q / (double)N - mean * mean, 0.0);  // biased variance
    stats[row * 2 + 0] = (float)mean;
    stats[row * 2 + 1] = (float)(1.0 / sqrt(var + EPS));
  }
}

__device__ __forceinline__ float4 ln4(const float4& v, float mean, float rstd, const float4& w,
                                      const float4& b) {
  return make_float4((v.x - mean) * rstd * w.x + b.x, (v.y - mean) * rstd * w.y + b.y,
                     (v.z - mean) * rstd * w.z + b.z, (v.w - mean) * rstd * w.w + b.w);
}

// out[r, j] = (x[r, j] - mean_r) * rstd_r * weight[j] + bias[j] for all rows r < M; each
// thread owns columns j (grid-stride), so weight/bias are loaded once per column.
extern "C" __global__ void __launch_bounds__(256)
ln_apply(const float* __restrict__ x, const float* __restrict__ w,
         const float* __restrict__ bias, const float* __restrict__ stats,
         float* __restrict__ out, long long M, long long N) {
  const long long first = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  const long long step = (long long)gridDim.x * blockDim.x;
  const unsigned long long addr_bits = (unsigned long long)x | (unsigned long long)w |
                                       (unsigned long long)bias | (unsigned long long)out;
  const bool vec = (N % 4 == 0) && ((addr_bits & 15) == 0);
  if (vec) {
    const long long n4 = N / 4;
    const float4* x4 = reinterpret_cast<const float4*>(x);
    const float4* w4 = reinterpret_cast<const float4*>(w);
    const float4* b4 = reinterpret_cast<const float4*>(bias);
    float4* out4 = reinterpret_cast<float4*>(out);
    for (long long j = first; j < n4; j += step) {
      const float4 wv = __ldcs(w4 + j);
      const float4 bv = __ldcs(b4 + j);
      // Row r of column j; stats are 2*M floats, read through the read-only cache.
      auto put = [&](long long r, const float4& v) {
        __stcs(out4 + r * n4 + j, ln4(v, __ldg(stats + 2 * r), __ldg(stats + 2 * r + 1), wv, bv));
      };
      long long r = 0;
      for (; r + 3 < M; r += 4) {  // 4 rows per iteration: 4 float4 loads in flight
        const float4 a0 = __ldcs(x4 + (r + 0) * n4 + j);
        const float4 a1 = __ldcs(x4 + (r + 1) * n4 + j);
        const float4 a2 = __ldcs(x4 + (r + 2) * n4 + j);
        const float4 a3 = __ldcs(x4 + (r + 3) * n4 + j);
        put(r + 0, a0);
        put(r + 1, a1);
        put(r + 2, a2);
        put(r + 3, a3);
      }
      for (; r < M; ++r) put(r, __ldcs(x4 + r * n4 + j));
    }
  } else {
    for (long long j = first; j < N; j += step) {
      const float wv = w[j], bv = bias[j];
      for (long long r = 0; r < M; ++r)
        out[r * N + j] = (x[r * N + j] - stats[2 * r]) * stats[2 * r + 1] * wv + bv;
    }
  }
}
