/*kagent
{
  "launch": [
    {"kernel": "softmax_ref", "grid": ["x.shape[0]"], "block": [256],
     "args": ["x", "out", "i32:x.shape[0]", "i32:x.shape[1]"]}
  ]
}
*/
// Reference for softmax over the last dimension of a [rows, cols] f32 tensor:
//   out[r][c] = exp(x[r][c] - max_r) / sum_c' exp(x[r][c'] - max_r)
// One block of THREADS threads per row, three plain passes over the row (max, sum of exp,
// write), each followed by a tree reduction through shared memory. The block size in the
// plan must equal THREADS (a power of two).

#include <math_constants.h>  // CUDART_INF_F (NVRTC has no INFINITY macro)

#define THREADS 256

// Tree reduction of one value per thread; every thread gets the result. The final
// __syncthreads() lets the caller reuse `red` for the next reduction.
__device__ float block_reduce_max(float v, float* red) {
  const int tid = threadIdx.x;
  red[tid] = v;
  __syncthreads();
  for (int s = THREADS / 2; s > 0; s >>= 1) {
    if (tid < s) red[tid] = fmaxf(red[tid], red[tid + s]);
    __syncthreads();
  }
  const float result = red[0];
  __syncthreads();
  return result;
}

__device__ float block_reduce_sum(float v, float* red) {
  const int tid = threadIdx.x;
  red[tid] = v;
  __syncthreads();
  for (int s = THREADS / 2; s > 0; s >>= 1) {
    if (tid < s) red[tid] = red[tid] + red[tid + s];
    __syncthreads();
  }
  const float result = red[0];
  __syncthreads();
  return result;
}

extern "C" __global__ void softmax_ref(const float* x, float* out, int rows, int cols) {
  __shared__ float red[THREADS];
  const int row = blockIdx.x;
  if (row >= rows) return;  // uniform per block, so no thread skips a __syncthreads()
  const float* xr = x + (size_t)row * cols;
  float* outr = out + (size_t)row * cols;

  // Pass 1: row maximum.
  float m = -CUDART_INF_F;
  for (int c = threadIdx.x; c < cols; c += THREADS) m = fmaxf(m, xr[c]);
  m = block_reduce_max(m, red);

  // Pass 2: sum of exp(x - max).
  float s = 0.0f;
  for (int c = threadIdx.x; c < cols; c += THREADS) s += expf(xr[c] - m);
  s = block_reduce_sum(s, red);

  // Pass 3: normalize and write.
  for (int c = threadIdx.x; c < cols; c += THREADS) outr[c] = expf(xr[c] - m) / s;
}
