/*kagent
{
  "scratch": {"stats": {"dtype": "f32", "shape": ["x.shape[0]", 2]}},
  "launch": [
    {"kernel": "row_stats", "grid": ["x.shape[0]"], "block": [256],
     "args": ["x", "stats", "i32:x.shape[0]", "i32:x.shape[1]"]},
    {"kernel": "row_normalize", "grid": ["cdiv(x.shape[1],256)", "x.shape[0]"], "block": [256],
     "args": ["x", "stats", "out", "i32:x.shape[0]", "i32:x.shape[1]"]}
  ]
}
*/
// Candidate: two launches that communicate through a scratch buffer. `stats` is a
// [rows, 2] f32 buffer that the harness allocates for the duration of one forward call
// (its contents on entry are undefined; row_stats writes every entry before row_normalize
// reads it, and the two launches run in order on one stream).
//   row_stats:     one block per row; stats[r] = {max of row r, sum of exp(x - max)}.
//   row_normalize: a 2-D grid (column chunks x rows), one output element per thread.
// The second grid's y dimension is the row count, so rows must be at most 65535.

#include <math_constants.h>  // CUDART_INF_F (NVRTC has no INFINITY macro)

#define FULL_MASK 0xffffffffu

__device__ __forceinline__ float warp_max(float v) {
  for (int off = 16; off > 0; off >>= 1) v = fmaxf(v, __shfl_xor_sync(FULL_MASK, v, off));
  return v;
}

__device__ __forceinline__ float warp_sum(float v) {
  for (int off = 16; off > 0; off >>= 1) v += __shfl_xor_sync(FULL_MASK, v, off);
  return v;
}

// Block-wide reductions for blockDim.x a multiple of 32 (up to 1024); every thread gets the
// result. `buf` holds 32 floats; the trailing __syncthreads() makes it reusable at once.
__device__ float block_max(float v, float* buf) {
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, nwarps = blockDim.x / 32;
  v = warp_max(v);
  if (lane == 0) buf[warp] = v;
  __syncthreads();
  v = lane < nwarps ? buf[lane] : -CUDART_INF_F;
  v = warp_max(v);  // every warp reduces the per-warp values itself: no broadcast step
  __syncthreads();
  return v;
}

__device__ float block_sum(float v, float* buf) {
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, nwarps = blockDim.x / 32;
  v = warp_sum(v);
  if (lane == 0) buf[warp] = v;
  __syncthreads();
  v = lane < nwarps ? buf[lane] : 0.0f;
  v = warp_sum(v);
  __syncthreads();
  return v;
}

extern "C" __global__ void row_stats(const float* __restrict__ x, float* __restrict__ stats,
                                     int rows, int cols) {
  __shared__ float buf[32];
  const int row = blockIdx.x;
  if (row >= rows) return;  // uniform per block
  const float* xr = x + (size_t)row * cols;

  float m = -CUDART_INF_F;
  for (int c = threadIdx.x; c < cols; c += blockDim.x) m = fmaxf(m, xr[c]);
  m = block_max(m, buf);

  float s = 0.0f;
  for (int c = threadIdx.x; c < cols; c += blockDim.x) s += expf(xr[c] - m);
  s = block_sum(s, buf);

  if (threadIdx.x == 0) {
    stats[2 * (size_t)row + 0] = m;
    stats[2 * (size_t)row + 1] = s;
  }
}

extern "C" __global__ void row_normalize(const float* __restrict__ x,
                                         const float* __restrict__ stats,
                                         float* __restrict__ out, int rows, int cols) {
  const int row = blockIdx.y;
  const int col = blockIdx.x * blockDim.x + threadIdx.x;
  if (row >= rows || col >= cols) return;
  const float m = stats[2 * (size_t)row + 0];
  const float s = stats[2 * (size_t)row + 1];
  const size_t i = (size_t)row * cols + col;
  out[i] = expf(x[i] - m) / s;
}
