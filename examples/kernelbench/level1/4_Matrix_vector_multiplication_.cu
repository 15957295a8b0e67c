/*kagent
{
  "launch": [
    {"kernel": "gemv_row_per_block", "grid": ["A.shape[0]"], "block": [256],
     "args": ["A", "B", "out", "i32:A.shape[0]", "i64:A.shape[1]"]}
  ]
}
*/
// KernelBench level1/4_Matrix_vector_multiplication_: out = A @ B with A [2048, 1048576],
// B [1048576, 1], out [2048, 1]; fp32, torch.rand inputs (all values in [0, 1)).
//
// Approach: purely memory-bound (A is 8.6 GB, read once), so one 256-thread block per row of A
// streams that row with float4 loads, 4 independent float4 loads of A (and of B) in flight per
// thread per iteration. A is read with __ldcs (streaming / evict-first) so that the 4 MB vector
// B, which every block re-reads, stays resident in the 50 MB L2.
// Accuracy: each thread keeps 16 independent fp32 partial sums (4 float4 accumulators), each
// over K / (256 * 16) = 256 products, then sums them pairwise, then a warp-shuffle tree and a
// shared-memory tree across the 8 warps. All terms are non-negative here, so there is no
// cancellation; the relative rounding error stays around 1e-6, far inside 1e-4.
// Indices: row * K reaches 2^31 for this shape, so row offsets and the loop index are 64-bit.
// Any K works: if K % 4 != 0 (rows not 16-byte aligned) a scalar loop is used instead.

#define NTHREADS 256
#define UNROLL 4
#define FULL_MASK 0xffffffffu

__device__ __forceinline__ void fma4(float4& acc, const float4& a, const float4& b) {
  acc.x = fmaf(a.x, b.x, acc.x);
  acc.y = fmaf(a.y, b.y, acc.y);
  acc.z = fmaf(a.z, b.z, acc.z);
  acc.w = fmaf(a.w, b.w, acc.w);
}

extern "C" __global__ void __launch_bounds__(NTHREADS)
gemv_row_per_block(const float* __restrict__ A,   // [M, K]
                   const float* __restrict__ B,   // [K] (the [K, 1] column vector)
                   float* __restrict__ out,       // [M] (the [M, 1] result)
                   int M, long long K) {
  __shared__ float warp_sums[NTHREADS / 32];

  const int row = blockIdx.x;
  if (row >= M) return;  // uniform per block
  const int tid = threadIdx.x;
  const float* a = A + (size_t)row * (size_t)K;

  float4 acc[UNROLL];
#pragma unroll
  for (int u = 0; u < UNROLL; ++u) acc[u] = make_float4(0.f, 0.f, 0.f, 0.f);

  const bool vec4 = (K % 4 == 0) &&
                    ((((unsigned long long)A | (unsigned long long)B) & 15) == 0);
  if (vec4) {
    const float4* a4 = reinterpret_cast<const float4*>(a);
    const float4* b4 = reinterpret_cast<const float4*>(B);
    const long long K4 = K / 4;
    long long i = tid;
    // Main loop: UNROLL independent float4 loads of A and B per thread per iteration.
    for (; i + (UNROLL - 1) * NTHREADS < K4; i += UNROLL * NTHREADS) {
      float4 av[UNROLL], bv[UNROLL];
#pragma unroll
      for (int u = 0; u < UNROLL; ++u) {
        av[u] = __ldcs(a4 + i + u * NTHREADS);
        bv[u] = __ldg(b4 + i + u * NTHREADS);
      }
#pragma unroll
      for (int u = 0; u < UNROLL; ++u) fma4(acc[u], av[u], bv[u]);
    }
    // Remainder (fewer than UNROLL * NTHREADS float4s left).
    for (; i < K4; i += NTHREADS) fma4(acc[0], __ldcs(a4 + i), __ldg(b4 + i));
  } else {
    for (long long k = tid; k < K; k += NTHREADS) acc[0].x = fmaf(__ldcs(a + k), __ldg(B + k), acc[0].x);
  }

  // Per-thread pairwise combination of the 16 partial sums.
#pragma unroll
  for (int u = 0; u < UNROLL; ++u) {
    acc[u].x += acc[u].y;
    acc[u].z += acc[u].w;
    acc[u].x += acc[u].z;
  }
  float s = (acc[0].x + acc[1].x) + (acc[2].x + acc[3].x);

  // Warp tree, then tree across the warps.
#pragma unroll
  for (int off = 16; off > 0; off >>= 1) s += __shfl_xor_sync(FULL_MASK, s, off);
  if ((tid & 31) == 0) warp_sums[tid >> 5] = s;
  __syncthreads();
  if (tid < 32) {
    float w = tid < NTHREADS / 32 ? warp_sums[tid] : 0.f;
#pragma unroll
    for (int off = 16; off > 0; off >>= 1) w += __shfl_xor_sync(FULL_MASK, w, off);
    if (tid == 0) out[row] = w;
  }
}
