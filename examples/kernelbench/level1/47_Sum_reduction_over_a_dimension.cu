/*kagent
{
  "launch": [
    {"kernel": "sum_dim1", "grid": ["cdiv(x.shape[2],32)", "x.shape[0]"], "block": [32, 8],
     "args": ["x", "out", "i64:x.shape[1]", "i64:x.shape[2]"]}
  ]
}
*/
// KernelBench level1/47_Sum_reduction_over_a_dimension: out = sum(x, dim=1, keepdim=True),
// x [B=128, K=4096, N=4095] f32 (8.6 GB) -> out [128, 1, 4095]. The module's dim (1, from
// get_init_inputs) is hard-coded: the kernel reduces the middle dimension of a 3-D tensor.
// The reduced dimension is strided (stride N), so each thread owns one output column n and
// walks down K; a warp covers 32 consecutive columns, so every load instruction of a warp is
// one coalesced 128-byte row segment (N = 4095 is odd, so rows are not 16-byte aligned and
// float4 loads are not possible). Block (32, 8): the 8 warps of a block split K 8 ways
// (interleaved rows) and combine their partial sums through shared memory, which gives
// 128 x 128 = 16384 blocks of parallelism. Each thread keeps 8 independent accumulators
// (8 loads in flight; also shorter, more accurate summation chains). x is read exactly once,
// with streaming hints. 64-bit offsets (B*K*N is just under 2^31 here, but no margin).
// The plan must launch block (32, 8): the kernel's shared array is sized for it.

#define BX 32  // columns per block (one warp wide)
#define BY 8   // ways K is split inside a block

extern "C" __global__ void __launch_bounds__(BX * BY, 8)  // 8 blocks (2048 threads) per SM
sum_dim1(const float* __restrict__ x, float* __restrict__ out, long long K, long long N) {
  __shared__ float part[BY][BX + 1];
  const int tx = threadIdx.x, ty = threadIdx.y;
  const long long n = (long long)blockIdx.x * BX + tx;  // output column
  const long long b = blockIdx.y;                       // batch index

  // 8 independent accumulators: 8 loads in flight per thread, and 8 short summation chains
  // (64 values each here) instead of one long one, which is also more accurate.
  float acc[8];
#pragma unroll
  for (int j = 0; j < 8; ++j) acc[j] = 0.0f;
  if (n < N) {
    const float* p = x + b * K * N + n;  // x[b, 0, n]
    long long k = ty;
    // Rows k, k + BY, ..., k + 7*BY per iteration.
    for (; k + 7 * BY < K; k += 8 * BY) {
      float v[8];
#pragma unroll
      for (int j = 0; j < 8; ++j) v[j] = __ldcs(p + (k + j * BY) * N);
#pragma unroll
      for (int j = 0; j < 8; ++j) acc[j] += v[j];
    }
    for (; k < K; k += BY) acc[0] += __ldcs(p + k * N);  // remainder rows
  }
  part[ty][tx] =
      ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
  __syncthreads();  // reached by every thread (no early return above)

  if (ty == 0 && n < N) {
    float s = 0.0f;
#pragma unroll
    for (int y = 0; y < BY; ++y) s += part[y][tx];
    out[b * N + n] = s;  // out[b, 0, n]
  }
}
