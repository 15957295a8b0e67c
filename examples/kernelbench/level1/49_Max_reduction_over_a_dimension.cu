/*kagent
{
  "launch": [
    {"kernel": "max_dim1", "grid": ["cdiv(x.shape[2],32)", "x.shape[0]"], "block": [32, 8],
     "args": ["x", "out", "i64:x.shape[1]", "i64:x.shape[2]"]}
  ]
}
*/
// KernelBench level1/49_Max_reduction_over_a_dimension: out = torch.max(x, dim=1)[0],
// x [B=128, K=4096, N=4095] f32 (8.6 GB) -> out [128, 4095] (no keepdim). The module's dim
// (1, from get_init_inputs) is hard-coded: the kernel reduces the middle dim of a 3-D tensor.
// The reduced dimension is strided (stride N), so each thread owns one output column n and
// walks down K; a warp covers 32 consecutive columns, so every load instruction of a warp is
// one coalesced 128-byte row segment (N = 4095 is odd, so rows are not 16-byte aligned and
// float4 loads are not possible). Block (32, 8): the 8 warps of a block split K 8 ways
// (interleaved rows) and combine their partial maxima through shared memory, which gives
// 128 x 128 = 16384 blocks of parallelism. Each thread keeps 8 independent running maxima
// (8 loads in flight). The max is NaN-propagating like torch.max. x is read exactly once,
// with streaming hints. 64-bit offsets (B*K*N is just under 2^31 here, but no margin).
// The plan must launch block (32, 8): the kernel's shared array is sized for it.

#define BX 32  // columns per block (one warp wide)
#define BY 8   // ways K is split inside a block

#include <math_constants.h>  // CUDART_INF_F

// max(a, v) that returns NaN if v is NaN (torch.max propagates NaN; fmaxf would drop it).
// Once a is NaN it stays NaN, since v > NaN is false.
__device__ __forceinline__ float nanmax(float a, float v) { return (v > a || v != v) ? v : a; }

extern "C" __global__ void __launch_bounds__(BX * BY, 8)  // 8 blocks (2048 threads) per SM
max_dim1(const float* __restrict__ x, float* __restrict__ out, long long K, long long N) {
  __shared__ float part[BY][BX + 1];
  const int tx = threadIdx.x, ty = threadIdx.y;
  const long long n = (long long)blockIdx.x * BX + tx;  // output column
  const long long b = blockIdx.y;                       // batch index

  // 8 independent running maxima: 8 loads in flight per thread.
  float acc[8];
#pragma unroll
  for (int j = 0; j < 8; ++j) acc[j] = -CUDART_INF_F;
  if (n < N) {
    const float* p = x + b * K * N + n;  // x[b, 0, n]
    long long k = ty;
    // Rows k, k + BY, ..., k + 7*BY per iteration.
    for (; k + 7 * BY < K; k += 8 * BY) {
      float v[8];
#pragma unroll
      for (int j = 0; j < 8; ++j) v[j] = __ldcs(p + (k + j * BY) * N);
#pragma unroll
      for (int j = 0; j < 8; ++j) acc[j] = nanmax(acc[j], v[j]);
    }
    for (; k < K; k += BY) acc[0] = nanmax(acc[0], __ldcs(p + k * N));  // remainder rows
  }
#pragma unroll
  for (int j = 1; j < 8; ++j) acc[0] = nanmax(acc[0], acc[j]);
  part[ty][tx] = acc[0];
  __syncthreads();  // reached by every thread (no early return above)

  if (ty == 0 && n < N) {
    float r = part[0][tx];
#pragma unroll
    for (int y = 1; y < BY; ++y) r = nanmax(r, part[y][tx]);
    out[b * N + n] = r;  // out[b, n]
  }
}
