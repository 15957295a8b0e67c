/*kagent
{
  "launch": [
    {"kernel": "log_softmax_rows", "grid": ["x.shape[0]"], "block": [512],
     "args": ["x", "out", "i64:x.shape[1]"]}
  ]
}
*/
// KernelBench level1/24_LogSoftmax: out = log_softmax(x, dim=1) (the module's dim=1 is
// hard-coded), x [4096, 393216] f32 (6.4 GB; each row is 1.5 MB, far too big for the shared
// memory or registers of one block).
// Approach: one block of 512 threads per row, online log-sum-exp. Pass 1 reads the row once
// and keeps, per thread, a running max m and a sum s of exp(x - m) that is rescaled whenever
// m grows (checked once per 8 values, not per value); the per-thread pairs are merged with
// warp shuffles and then across the 16 warps through shared memory, giving
// lse = m + log(s). Pass 2 re-reads the row and writes x - lse (no exp needed). That is
// 2 reads + 1 write of the tensor instead of the 3 reads + 1 write of a max / sum / write
// scheme. float4 loads/stores (cols % 4 == 0 and 16-byte aligned pointers make every row
// 16-byte aligned), two float4 loads in flight per thread per iteration, cache-streaming
// hints on pass 2; a scalar path handles any other shape or alignment. The row max is
// subtracted before exp, so it is numerically stable. 64-bit indexing throughout. Works for
// any block size that is a multiple of 32 up to 1024.

#include <math_constants.h>  // CUDART_INF_F

#define FULL_MASK 0xffffffffu

// Merge (m2, s2) into (m, s); each pair means sum(exp(v - m)) over a disjoint set of values.
// The empty set is (-inf, 0); merging two empty sets must not evaluate exp(-inf - -inf).
__device__ __forceinline__ void merge(float& m, float& s, float m2, float s2) {
  const float mn = fmaxf(m, m2);
  if (mn == -CUDART_INF_F) return;
  s = s * expf(m - mn) + s2 * expf(m2 - mn);
  m = mn;
}

// Add 8 values to the running pair: one rescale (if the max grew), then 8 exps.
__device__ __forceinline__ void push8(float& m, float& s, const float4& a, const float4& b) {
  const float lm = fmaxf(fmaxf(fmaxf(a.x, a.y), fmaxf(a.z, a.w)),
                         fmaxf(fmaxf(b.x, b.y), fmaxf(b.z, b.w)));
  if (lm > m) {
    s *= expf(m - lm);  // m == -inf on first use: s == 0 and expf(-inf) == 0
    m = lm;
  }
  if (m == -CUDART_INF_F) return;  // all values so far are -inf: they add exp(-inf) = 0
  s += (expf(a.x - m) + expf(a.y - m)) + (expf(a.z - m) + expf(a.w - m)) +
       (expf(b.x - m) + expf(b.y - m)) + (expf(b.z - m) + expf(b.w - m));
}

__device__ __forceinline__ void push1(float& m, float& s, float v) {
  if (v > m) {
    s = s * expf(m - v) + 1.0f;
    m = v;
  } else if (m != -CUDART_INF_F) {
    s += expf(v - m);
  }
}

// log_softmax(v) = v - (max + log(sum exp(v - max))) = v - lse.
__device__ __forceinline__ float4 logsoftmax4(const float4& v, float lse) {
  return make_float4(v.x - lse, v.y - lse, v.z - lse, v.w - lse);
}

extern "C" __global__ void __launch_bounds__(1024)
log_softmax_rows(const float* __restrict__ x, float* __restrict__ out, long long cols) {
  __shared__ float warp_m[32];
  __shared__ float warp_s[32];
  __shared__ float row_lse;

  const long long row = blockIdx.x;  // grid.x == rows, one block per row
  const float* xr = x + row * cols;
  float* outr = out + row * cols;
  const int tid = threadIdx.x;
  const int nthreads = blockDim.x;
  const bool vec4 = (cols % 4 == 0) &&
                    ((((unsigned long long)x | (unsigned long long)out) & 15) == 0);

  // ---- Pass 1: per-thread running (m, s) over the row.
  float m = -CUDART_INF_F, s = 0.0f;
  if (vec4) {
    const long long c4 = cols / 4;
    const float4* xr4 = reinterpret_cast<const float4*>(xr);
    long long c = tid;
    for (; c + nthreads < c4; c += 2 * nthreads) push8(m, s, xr4[c], xr4[c + nthreads]);
    if (c < c4) {  // at most one float4 left for this thread
      const float4 v = xr4[c];
      push1(m, s, v.x);
      push1(m, s, v.y);
      push1(m, s, v.z);
      push1(m, s, v.w);
    }
  } else {
    for (long long c = tid; c < cols; c += nthreads) push1(m, s, xr[c]);
  }

  // ---- Block reduction of (m, s): warp shuffles, then warp 0 merges the per-warp pairs.
  for (int off = 16; off > 0; off >>= 1) {
    const float m2 = __shfl_xor_sync(FULL_MASK, m, off);
    const float s2 = __shfl_xor_sync(FULL_MASK, s, off);
    merge(m, s, m2, s2);
  }
  const int warp = tid / 32, lane = tid % 32;
  if (lane == 0) {
    warp_m[warp] = m;
    warp_s[warp] = s;
  }
  __syncthreads();
  if (warp == 0) {
    const int nwarps = nthreads / 32;
    m = lane < nwarps ? warp_m[lane] : -CUDART_INF_F;
    s = lane < nwarps ? warp_s[lane] : 0.0f;
    for (int off = 16; off > 0; off >>= 1) {
      const float m2 = __shfl_xor_sync(FULL_MASK, m, off);
      const float s2 = __shfl_xor_sync(FULL_MASK, s, off);
      merge(m, s, m2, s2);
    }
    if (lane == 0) row_lse = m + logf(s);  // log-sum-exp of the row
  }
  __syncthreads();
  const float lse = row_lse;

  // ---- Pass 2: re-read the row, write x - lse.
  if (vec4) {
    const long long c4 = cols / 4;
    const float4* xr4 = reinterpret_cast<const float4*>(xr);
    float4* outr4 = reinterpret_cast<float4*>(outr);
    long long c = tid;
    for (; c + nthreads < c4; c += 2 * nthreads) {
      const float4 a = __ldcs(xr4 + c);  // last use of x: streaming load
      const float4 b = __ldcs(xr4 + c + nthreads);
      __stcs(outr4 + c, logsoftmax4(a, lse));
      __stcs(outr4 + c + nthreads, logsoftmax4(b, lse));
    }
    if (c < c4) __stcs(outr4 + c, logsoftmax4(__ldcs(xr4 + c), lse));
  } else {
    for (long long c = tid; c < cols; c += nthreads) outr[c] = xr[c] - lse;
  }
}
