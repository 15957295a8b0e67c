/*kagent
{
  "launch": [
    {"kernel": "gemm_mul_leakyrelu", "grid": ["cdiv(gemm_weight.shape[0],128)", "cdiv(x.shape[0],128)"],
     "block": [256],
     "args": ["x", "gemm_weight", "gemm_bias", "out",
              "i32:x.shape[0]", "i32:gemm_weight.shape[0]", "i32:x.shape[1]"]}
  ]
}
*/
// KernelBench level2/12_Gemm_Multiply_LeakyReLU:
//   out = LeakyReLU((x @ gemm_weight^T + gemm_bias) * multiplier, negative_slope)
// x [1024, 8192] (torch.rand), gemm_weight [8192, 8192], gemm_bias [8192], out [1024, 8192].
// multiplier = 2.0 and negative_slope = 0.1 are plain attributes (not parameters), hard-coded
// below from get_init_inputs() = [8192, 8192, 2.0, 0.1].
//
// Approach: one fused kernel, a register-blocked shared-memory SGEMM in plain fp32 FFMA (no
// TF32 / tensor cores) with the bias, multiply and LeakyReLU applied in the epilogue.
//  - Each 256-thread block computes a 128x128 tile of out; each thread an 8x8 sub-tile held in
//    64 registers, laid out as 2x2 groups of 4x4 (rows ty*4 + {0..3} and 64 + ty*4 + {0..3},
//    columns tx*4 + {0..3} and 64 + tx*4 + {0..3}) so every shared-memory read and every global
//    store is a conflict-free / coalesced float4.
//  - K advances in steps of BK = 8. Both operands are K-contiguous (x [M, K], W [N, K]); each
//    thread loads one float4 of each per tile and stores it transposed (Xs[k][m], Ws[k][n]), so
//    a thread's 8 values for one k are two float4 reads.
//  - Two shared-memory buffers plus a register prefetch: the global loads of tile t+1 are issued
//    before the FFMAs of tile t and stored to the other buffer afterwards, so one
//    __syncthreads per tile suffices.
// Edges: rows/columns beyond M/N and k beyond K are zero-filled on load and skipped on store, so
// any M, N, K work provided K % 4 == 0 and N % 4 == 0 (float4 granularity; checked with __trap).
// The problem's 1024 x 8192 x 8192 is a multiple of every tile size. Indices use 64-bit
// arithmetic (row * K can exceed 2^31 for large matrices).

#define BM 128
#define BN 128
#define BK 8
#define NTHREADS 256
#define SPAD 4  // row padding: makes the transposed float4 -> 4 scalar stores conflict-free

#define MULTIPLIER 2.0f       // self.multiplier (get_init_inputs)
#define NEGATIVE_SLOPE 0.1f   // nn.LeakyReLU(negative_slope) (get_init_inputs)

// Fused epilogue: v = gemm + bias; v *= multiplier; LeakyReLU as in PyTorch (x > 0 ? x : x * s).
__device__ __forceinline__ float epilogue(float acc, float bias) {
  float v = (acc + bias) * MULTIPLIER;
  return v > 0.f ? v : v * NEGATIVE_SLOPE;
}

extern "C" __global__ void __launch_bounds__(NTHREADS)
gemm_mul_leakyrelu(const float* __restrict__ X,     // [M, K]
                   const float* __restrict__ W,     // [N, K] (nn.Linear weight)
                   const float* __restrict__ bias,  // [N]
                   float* __restrict__ C,           // [M, N]
                   int M, int N, int K) {
  if ((K & 3) || (N & 3)) __trap();  // float4 loads/stores need K % 4 == 0 and N % 4 == 0

  __shared__ __align__(16) float Xs[2][BK][BM + SPAD];  // Xs[buf][k][m] = X[m0 + m][k0 + k]
  __shared__ __align__(16) float Ws[2][BK][BN + SPAD];  // Ws[buf][k][n] = W[n0 + n][k0 + k]

  const int tid = threadIdx.x;
  const int tx = tid & 15;  // column group of this thread's 8x8 sub-tile
  const int ty = tid >> 4;  // row group
  const int m0 = blockIdx.y * BM;
  const int n0 = blockIdx.x * BN;

  // Global -> shared load mapping: thread loads row (m0|n0) + ld_row, k0 + ld_k .. +3 of each
  // operand; thread pairs read 32 contiguous bytes of one row.
  const int ld_row = tid >> 1;      // 0..127
  const int ld_k = (tid & 1) * 4;   // 0 or 4
  const bool x_ok = (m0 + ld_row) < M;
  const bool w_ok = (n0 + ld_row) < N;
  const float* x_src = X + (size_t)(x_ok ? m0 + ld_row : 0) * K + ld_k;
  const float* w_src = W + (size_t)(w_ok ? n0 + ld_row : 0) * K + ld_k;

  const float4 zero4 = make_float4(0.f, 0.f, 0.f, 0.f);

  // Loads the tile starting at k0 into registers (zero outside the matrices).
  auto load_x = [&](int k0) -> float4 {
    return (x_ok && k0 + ld_k < K) ? __ldg(reinterpret_cast<const float4*>(x_src + k0)) : zero4;
  };
  auto load_w = [&](int k0) -> float4 {
    return (w_ok && k0 + ld_k < K) ? __ldg(reinterpret_cast<const float4*>(w_src + k0)) : zero4;
  };
  auto store_tiles = [&](int buf, const float4& xv, const float4& wv) {
    Xs[buf][ld_k + 0][ld_row] = xv.x;
    Xs[buf][ld_k + 1][ld_row] = xv.y;
    Xs[buf][ld_k + 2][ld_row] = xv.z;
    Xs[buf][ld_k + 3][ld_row] = xv.w;
    Ws[buf][ld_k + 0][ld_row] = wv.x;
    Ws[buf][ld_k + 1][ld_row] = wv.y;
    Ws[buf][ld_k + 2][ld_row] = wv.z;
    Ws[buf][ld_k + 3][ld_row] = wv.w;
  };

  float acc[8][8];
#pragma unroll
  for (int i = 0; i < 8; ++i)
#pragma unroll
    for (int j = 0; j < 8; ++j) acc[i][j] = 0.f;

  const int ntiles = (K + BK - 1) / BK;
  {
    const float4 xv = load_x(0), wv = load_w(0);
    store_tiles(0, xv, wv);
  }
  __syncthreads();

  for (int t = 0; t < ntiles; ++t) {
    const int cur = t & 1;
    const bool has_next = (t + 1) < ntiles;
    float4 xv_next = zero4, wv_next = zero4;
    if (has_next) {  // prefetch the next tile; latency hidden behind the FFMAs below
      xv_next = load_x((t + 1) * BK);
      wv_next = load_w((t + 1) * BK);
    }

#pragma unroll
    for (int kk = 0; kk < BK; ++kk) {
      const float4 a0 = *reinterpret_cast<const float4*>(&Xs[cur][kk][ty * 4]);
      const float4 a1 = *reinterpret_cast<const float4*>(&Xs[cur][kk][64 + ty * 4]);
      const float4 b0 = *reinterpret_cast<const float4*>(&Ws[cur][kk][tx * 4]);
      const float4 b1 = *reinterpret_cast<const float4*>(&Ws[cur][kk][64 + tx * 4]);
      const float a[8] = {a0.x, a0.y, a0.z, a0.w, a1.x, a1.y, a1.z, a1.w};
      const float b[8] = {b0.x, b0.y, b0.z, b0.w, b1.x, b1.y, b1.z, b1.w};
#pragma unroll
      for (int i = 0; i < 8; ++i)
#pragma unroll
        for (int j = 0; j < 8; ++j) acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
    }

    // The other buffer was last read in iteration t-1, and every thread has passed the barrier
    // at the end of t-1, so it can be overwritten now; the barrier below publishes it for t+1.
    if (has_next) store_tiles(cur ^ 1, xv_next, wv_next);
    __syncthreads();
  }

  // Epilogue: bias + multiply + LeakyReLU, float4 stores, skipping rows/cols past M/N.
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const int col = n0 + h * 64 + tx * 4;
    if (col >= N) continue;  // N % 4 == 0: col < N means all 4 columns are in range
    const float4 bv = make_float4(__ldg(bias + col), __ldg(bias + col + 1), __ldg(bias + col + 2),
                                  __ldg(bias + col + 3));
#pragma unroll
    for (int i = 0; i < 8; ++i) {
      const int row = m0 + (i < 4 ? ty * 4 + i : 64 + ty * 4 + (i - 4));
      if (row < M)
        *reinterpret_cast<float4*>(C + (size_t)row * N + col) =
            make_float4(epilogue(acc[i][h * 4 + 0], bv.x), epilogue(acc[i][h * 4 + 1], bv.y),
                        epilogue(acc[i][h * 4 + 2], bv.z), epilogue(acc[i][h * 4 + 3], bv.w));
    }
  }
}
