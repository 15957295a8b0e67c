/*kagent
{
  "launch": [
    {"kernel": "linear_relu", "grid": ["cdiv(linear_weight.shape[0],16)", "cdiv(x.shape[0],16)"],
     "block": [16, 16],
     "args": ["x", "linear_weight", "linear_bias", "out",
              "i32:x.shape[0]", "i32:linear_weight.shape[0]", "i32:x.shape[1]"]}
  ]
}
*/
// Candidate for model.py (Linear + ReLU): out = relu(x @ linear_weight^T + linear_bias).
// Shows the tensor names of a PyTorch reference: `x` is forward()'s parameter, the
// state_dict entries linear.weight [N, K] and linear.bias [N] become linear_weight and
// linear_bias, and the result is `out` [M, N].
// A classic 16x16 shared-memory tiled GEMM: each block computes a 16x16 tile of out; each
// thread one element, accumulated in fp32 over K in steps of 16. Tiles are zero-padded at
// the edges, so any M, N, K work.

#define TILE 16

// x [M, K], w [N, K] (linear_weight), b [N] (linear_bias), out [M, N]; all row-major.
extern "C" __global__ void linear_relu(const float* __restrict__ x, const float* __restrict__ w,
                                       const float* __restrict__ b, float* __restrict__ out,
                                       int M, int N, int K) {
  __shared__ float xs[TILE][TILE];      // xs[r][k] = x[m0 + r][k0 + k]
  __shared__ float ws[TILE][TILE + 1];  // ws[c][k] = w[n0 + c][k0 + k]; +1 avoids bank conflicts
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int m0 = blockIdx.y * TILE, n0 = blockIdx.x * TILE;
  const int row = m0 + ty;  // output row (index into M)
  const int col = n0 + tx;  // output column (index into N)

  float acc = 0.0f;
  for (int k0 = 0; k0 < K; k0 += TILE) {
    // Both tiles are loaded row-major with tx along K, so global reads are coalesced.
    const int k = k0 + tx;
    xs[ty][tx] = (m0 + ty < M && k < K) ? x[(size_t)(m0 + ty) * K + k] : 0.0f;
    ws[ty][tx] = (n0 + ty < N && k < K) ? w[(size_t)(n0 + ty) * K + k] : 0.0f;
    __syncthreads();
#pragma unroll
    for (int kk = 0; kk < TILE; ++kk) acc += xs[ty][kk] * ws[tx][kk];
    __syncthreads();  // before the next iteration overwrites the tiles
  }
  if (row < M && col < N) out[(size_t)row * N + col] = fmaxf(acc + b[col], 0.0f);
}
