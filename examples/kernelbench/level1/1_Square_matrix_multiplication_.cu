/*kagent
{
  "launch": [
    {"kernel": "sgemm_nn_128x128", "grid": ["cdiv(B.shape[1],128)", "cdiv(A.shape[0],128)"],
     "block": [256],
     "args": ["A", "B", "out", "i32:A.shape[0]", "i32:B.shape[1]", "i32:A.shape[1]"]}
  ]
}
*/
// KernelBench level1/1_Square_matrix_multiplication_: out = A @ B with A, B [4096, 4096] fp32
// (torch.rand), out [4096, 4096]; all row-major.
//
// Approach: a register-blocked shared-memory SGEMM in plain fp32 FFMA (no TF32 / tensor cores,
// so the result matches full-fp32 cuBLAS to well within 1e-4 relative).
//  - Each 256-thread block computes a 128x128 tile of out; each thread an 8x8 sub-tile held in
//    64 registers, laid out as 2x2 groups of 4x4 (rows ty*4 + {0..3} and 64 + ty*4 + {0..3},
//    columns tx*4 + {0..3} and 64 + tx*4 + {0..3}) so every shared-memory read and every global
//    store is a conflict-free / coalesced float4.
//  - K advances in steps of BK = 8. The A tile is stored transposed (As[k][m]) so a thread's 8
//    A values for one k are two float4 reads; the B tile is already [k][n].
//  - Two shared-memory buffers plus a register prefetch: the global loads of tile t+1 are issued
//    before the FFMAs of tile t and stored to the other buffer afterwards, so one
//    __syncthreads per tile suffices.
// Edges: rows/columns beyond M/N and k beyond K are zero-filled on load and skipped on store, so
// any M, N, K work provided K % 4 == 0 and N % 4 == 0 (float4 granularity; checked with __trap).
// The problem's 4096 x 4096 x 4096 is a multiple of every tile size. Indices into A/B/out use
// 64-bit arithmetic (row * K can exceed 2^31 for large matrices).

#define BM 128
#define BN 128
#define BK 8
#define NTHREADS 256
#define APAD 4  // As row padding: makes the transposed float4 -> 4 scalar stores conflict-free

extern "C" __global__ void __launch_bounds__(NTHREADS)
sgemm_nn_128x128(const float* __restrict__ A,   // [M, K]
                 const float* __restrict__ B,   // [K, N]
                 float* __restrict__ C,         // [M, N]
                 int M, int N, int K) {
  if ((K & 3) || (N & 3)) __trap();  // float4 loads/stores need K % 4 == 0 and N % 4 == 0

  __shared__ __align__(16) float As[2][BK][BM + APAD];  // As[buf][k][m] = A[m0 + m][k0 + k]
  __shared__ __align__(16) float Bs[2][BK][BN];         // Bs[buf][k][n] = B[k0 + k][n0 + n]

  const int tid = threadIdx.x;
  const int tx = tid & 15;  // column group of this thread's 8x8 sub-tile
  const int ty = tid >> 4;  // row group
  const int m0 = blockIdx.y * BM;
  const int n0 = blockIdx.x * BN;

  // Global -> shared load mapping (one float4 of A and one of B per thread per tile).
  // A tile 128 x 8: thread loads A[m0 + a_row][k0 + a_k .. +3]; thread pairs read 32 contiguous B.
  const int a_row = tid >> 1;       // 0..127
  const int a_k = (tid & 1) * 4;    // 0 or 4
  // B tile 8 x 128: thread loads B[k0 + b_k][n0 + b_n .. +3]; a warp reads 512 contiguous B.
  const int b_k = tid >> 5;         // 0..7
  const int b_n = (tid & 31) * 4;   // 0..124

  const bool a_row_ok = (m0 + a_row) < M;
  const bool b_col_ok = (n0 + b_n) < N;  // N % 4 == 0, so the whole float4 is in range
  const float* a_src = A + (size_t)(a_row_ok ? m0 + a_row : 0) * K + a_k;
  const float* b_src = B + (b_col_ok ? n0 + b_n : 0);

  const float4 zero4 = make_float4(0.f, 0.f, 0.f, 0.f);

  // Loads tile starting at k0 into registers (zero outside the matrices).
  auto load_a = [&](int k0) -> float4 {
    return (a_row_ok && k0 + a_k < K) ? __ldg(reinterpret_cast<const float4*>(a_src + k0)) : zero4;
  };
  auto load_b = [&](int k0) -> float4 {
    return (b_col_ok && k0 + b_k < K)
               ? __ldg(reinterpret_cast<const float4*>(b_src + (size_t)(k0 + b_k) * N))
               : zero4;
  };
  auto store_tiles = [&](int buf, const float4& av, const float4& bv) {
    As[buf][a_k + 0][a_row] = av.x;
    As[buf][a_k + 1][a_row] = av.y;
    As[buf][a_k + 2][a_row] = av.z;
    As[buf][a_k + 3][a_row] = av.w;
    *reinterpret_cast<float4*>(&Bs[buf][b_k][b_n]) = bv;
  };

  float acc[8][8];
#pragma unroll
  for (int i = 0; i < 8; ++i)
#pragma unroll
    for (int j = 0; j < 8; ++j) acc[i][j] = 0.f;

  const int ntiles = (K + BK - 1) / BK;
  {
    const float4 av = load_a(0), bv = load_b(0);
    store_tiles(0, av, bv);
  }
  __syncthreads();

  for (int t = 0; t < ntiles; ++t) {
    const int cur = t & 1;
    const bool has_next = (t + 1) < ntiles;
    float4 av_next = zero4, bv_next = zero4;
    if (has_next) {  // prefetch the next tile; latency hidden behind the FFMAs below
      av_next = load_a((t + 1) * BK);
      bv_next = load_b((t + 1) * BK);
    }

#pragma unroll
    for (int kk = 0; kk < BK; ++kk) {
      const float4 a0 = *reinterpret_cast<const float4*>(&As[cur][kk][ty * 4]);
      const float4 a1 = *reinterpret_cast<const float4*>(&As[cur][kk][64 + ty * 4]);
      const float4 b0 = *reinterpret_cast<const float4*>(&Bs[cur][kk][tx * 4]);
      const float4 b1 = *reinterpret_cast<const float4*>(&Bs[cur][kk][64 + tx * 4]);
      const float a[8] = {a0.x, a0.y, a0.z, a0.w, a1.x, a1.y, a1.z, a1.w};
      const float b[8] = {b0.x, b0.y, b0.z, b0.w, b1.x, b1.y, b1.z, b1.w};
#pragma unroll
      for (int i = 0; i < 8; ++i)
#pragma unroll
        for (int j = 0; j < 8; ++j) acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
    }

    // The other buffer was last read in iteration t-1, and every thread has passed the barrier
    // at the end of t-1, so it can be overwritten now; the barrier below publishes it for t+1.
    if (has_next) store_tiles(cur ^ 1, av_next, bv_next);
    __syncthreads();
  }

  // Epilogue: acc[i][j] -> out[row(i)][col(j)], float4 stores, skipping rows/cols past M/N.
#pragma unroll
  for (int i = 0; i < 8; ++i) {
    const int row = m0 + (i < 4 ? ty * 4 + i : 64 + ty * 4 + (i - 4));
    if (row >= M) continue;
    float* crow = C + (size_t)row * N;
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int col = n0 + h * 64 + tx * 4;
      if (col < N)
        *reinterpret_cast<float4*>(crow + col) =
            make_float4(acc[i][h * 4 + 0], acc[i][h * 4 + 1], acc[i][h * 4 + 2], acc[i][h * 4 + 3]);
    }
  }
}
