/*kagent
{
  "launch": [
    {"kernel": "softmax_online", "grid": ["x.shape[0]"], "block": [256],
     "args": ["x", "out", "i32:x.shape[0]", "i32:x.shape[1]"]}
  ]
}
*/
// Candidate: online softmax, one block per row. Each thread keeps a running maximum m and a
// sum s of exp(x - m), rescaling s whenever m grows, so the row is read once to get both
// statistics (instead of twice) and once more to write the output. Partial (m, s) pairs are
// merged with warp shuffles, then across warps through a small shared array.
// Loads are float4 when cols % 4 == 0 and both pointers are 16-byte aligned (then every row
// starts 16-byte aligned); otherwise a scalar path is used. Correct for any cols >= 1 and any
// block size that is a multiple of 32 up to 1024.

#include <math_constants.h>  // CUDART_INF_F (NVRTC has no INFINITY macro)

#define FULL_MASK 0xffffffffu

// Merge the pair (m2, s2) into (m, s): both describe sum(exp(v - m)) over disjoint sets.
// An empty set is (-inf, 0); merging two empty sets must not produce exp(-inf - -inf) = NaN.
__device__ __forceinline__ void merge(float& m, float& s, float m2, float s2) {
  const float mn = fmaxf(m, m2);
  if (mn == -CUDART_INF_F) return;
  s = s * expf(m - mn) + s2 * expf(m2 - mn);
  m = mn;
}

// Add one element v to the running pair (m, s): one expf per element.
__device__ __forceinline__ void push(float& m, float& s, float v) {
  if (v > m) {
    s = s * expf(m - v) + 1.0f;  // m == -inf on the first element: s * 0 + 1
    m = v;
  } else if (v != -CUDART_INF_F) {   // exp(-inf) contributes 0 (and -inf - -inf would be NaN)
    s += expf(v - m);
  }
}

extern "C" __global__ void softmax_online(const float* __restrict__ x, float* __restrict__ out,
                                          int rows, int cols) {
  __shared__ float warp_m[32];
  __shared__ float warp_s[32];
  __shared__ float row_m, row_inv_s;

  const int row = blockIdx.x;
  if (row >= rows) return;  // uniform per block
  const float* xr = x + (size_t)row * cols;
  float* outr = out + (size_t)row * cols;
  const int tid = threadIdx.x;
  const int nthreads = blockDim.x;
  const bool vec4 = (cols % 4 == 0) &&
                    ((((unsigned long long)x | (unsigned long long)out) & 15) == 0);

  // Pass 1: per-thread running (m, s).
  float m = -CUDART_INF_F, s = 0.0f;
  if (vec4) {
    const float4* xr4 = reinterpret_cast<const float4*>(xr);
    for (int c = tid; c < cols / 4; c += nthreads) {
      const float4 v = xr4[c];
      push(m, s, v.x);
      push(m, s, v.y);
      push(m, s, v.z);
      push(m, s, v.w);
    }
  } else {
    for (int c = tid; c < cols; c += nthreads) push(m, s, xr[c]);
  }

  // Reduce within the warp...
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
  // ...then across warps, in warp 0.
  if (warp == 0) {
    const int nwarps = nthreads / 32;
    m = lane < nwarps ? warp_m[lane] : -CUDART_INF_F;
    s = lane < nwarps ? warp_s[lane] : 0.0f;
    for (int off = 16; off > 0; off >>= 1) {
      const float m2 = __shfl_xor_sync(FULL_MASK, m, off);
      const float s2 = __shfl_xor_sync(FULL_MASK, s, off);
      merge(m, s, m2, s2);
    }
    if (lane == 0) {
      row_m = m;
      row_inv_s = 1.0f / s;
    }
  }
  __syncthreads();
  const float mx = row_m, inv_s = row_inv_s;

  // Pass 2: normalize and write.
  if (vec4) {
    const float4* xr4 = reinterpret_cast<const float4*>(xr);
    float4* outr4 = reinterpret_cast<float4*>(outr);
    for (int c = tid; c < cols / 4; c += nthreads) {
      const float4 v = xr4[c];
      outr4[c] = make_float4(expf(v.x - mx) * inv_s, expf(v.y - mx) * inv_s,
                             expf(v.z - mx) * inv_s, expf(v.w - mx) * inv_s);
    }
  } else {
    for (int c = tid; c < cols; c += nthreads) outr[c] = expf(xr[c] - mx) * inv_s;
  }
}
