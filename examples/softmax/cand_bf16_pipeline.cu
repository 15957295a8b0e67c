/*kagent
{
  "launch": [
    {"kernel": "softmax_pipeline", "grid": ["x.shape[0]"], "block": [256],
     "args": ["x", "out", "i32:x.shape[0]", "i32:x.shape[1]"]}
  ]
}
*/
// Candidate: shows that <cuda/pipeline> and <cuda_bf16.h> compile under NVRTC and how they
// are used; it is not meant to be the fastest softmax.
//  - cuda::pipeline + cuda::memcpy_async: the row is streamed through shared memory in
//    TILE-float chunks with STAGES buffers, so the copy of chunk t+1 is in flight while chunk
//    t is processed. The pipeline is per thread (cuda::make_pipeline(), cp.async groups) and
//    every thread copies exactly the elements it later reads itself, so no block barrier is
//    needed between copy and use, nor before a buffer is refilled.
//    This pass computes the online (running max, rescaled sum) statistics of the row.
//  - bf16: softmax is shift-invariant, softmax(x) = exp(x - c) / sum exp(x - c) for any c,
//    so the stabilizing offset c need not be the exact row max M. We take c = M rounded to
//    bf16 (__float2bfloat16 / __bfloat162float) whenever |M - c| <= 1, which keeps every
//    exp(x - c) <= e and the sum >= 1/e; otherwise c = M. All arithmetic stays fp32, so the
//    result is as accurate as the reference.
// One block per row; block size a multiple of 32 up to 1024. Correct for any cols >= 1.

#include <cuda/pipeline>
#include <cuda_bf16.h>
#include <math_constants.h>  // CUDART_INF_F (NVRTC has no INFINITY macro)

#define FULL_MASK 0xffffffffu
#define TILE 1024   // floats per pipeline stage (4 KiB)
#define STAGES 2    // double buffering: 8 KiB of static shared memory for the tiles

// (m, s) describes sum(exp(v - m)) over a set of values; the empty set is (-inf, 0).
__device__ __forceinline__ void merge(float& m, float& s, float m2, float s2) {
  const float mn = fmaxf(m, m2);
  if (mn == -CUDART_INF_F) return;  // both empty: avoid exp(-inf - -inf) = NaN
  s = s * expf(m - mn) + s2 * expf(m2 - mn);
  m = mn;
}

__device__ __forceinline__ void push(float& m, float& s, float v) {
  if (v > m) {
    s = s * expf(m - v) + 1.0f;
    m = v;
  } else if (v != -CUDART_INF_F) {
    s += expf(v - m);
  }
}

extern "C" __global__ void softmax_pipeline(const float* __restrict__ x, float* __restrict__ out,
                                            int rows, int cols) {
  __shared__ float tile[STAGES][TILE];
  __shared__ float warp_m[32];
  __shared__ float warp_s[32];
  __shared__ float row_c, row_inv_s;

  const int row = blockIdx.x;
  if (row >= rows) return;  // uniform per block: every thread of the block takes part below
  const float* xr = x + (size_t)row * cols;
  float* outr = out + (size_t)row * cols;
  const int tid = threadIdx.x;
  const int nthreads = blockDim.x;

  // Per-thread pipeline: producer_commit() closes a group of this thread's async copies,
  // consumer_wait() waits for this thread's oldest unfinished group.
  cuda::pipeline<cuda::thread_scope_thread> pipe = cuda::make_pipeline();

  const int ntiles = (cols + TILE - 1) / TILE;
  auto fetch = [&](int t) {
    const int len = min(TILE, cols - t * TILE);
    float* dst = tile[t % STAGES];
    const float* src = xr + (size_t)t * TILE;
    pipe.producer_acquire();
    for (int i = tid; i < len; i += nthreads)  // the same indices the consumer loop reads
      cuda::memcpy_async(dst + i, src + i, cuda::aligned_size_t<alignof(float)>(sizeof(float)), pipe);
    pipe.producer_commit();  // commits a (possibly empty) group even if this thread copied nothing
  };

  // Pass 1: stream the row through shared memory, accumulating per-thread (m, s).
  float m = -CUDART_INF_F, s = 0.0f;
  fetch(0);
  for (int t = 0; t < ntiles; ++t) {
    // Refills the buffer this thread read in iteration t - 1 (its own elements only).
    if (t + 1 < ntiles) fetch(t + 1);
    pipe.consumer_wait();  // this thread's copies of tile t have landed
    const float* buf = tile[t % STAGES];
    const int len = min(TILE, cols - t * TILE);
    for (int i = tid; i < len; i += nthreads) push(m, s, buf[i]);
    pipe.consumer_release();
  }

  // Block reduction of (m, s): warp shuffles, then warp 0 merges the per-warp pairs.
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
    if (lane == 0) {
      // m is the exact row max, s = sum exp(x - m). Re-base on the bf16-rounded offset.
      float c = __bfloat162float(__float2bfloat16(m));
      if (!(fabsf(m - c) <= 1.0f)) c = m;  // huge |m| (or inf/NaN): keep the exact max
      row_c = c;
      row_inv_s = 1.0f / (s * expf(m - c));  // sum exp(x - c) = s * exp(m - c)
    }
  }
  __syncthreads();
  const float c = row_c, inv_s = row_inv_s;

  // Pass 2: write the output (x is read again from global memory; the row is likely in L2).
  for (int i = tid; i < cols; i += nthreads) outr[i] = expf(xr[i] - c) * inv_s;
}
