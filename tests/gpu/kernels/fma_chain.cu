/*kagent
{
  "launch": [
    {"kernel": "vector_add_fma_chain", "grid": ["cdiv(numel(out), 256)"], "block": [256],
     "args": ["a", "b", "out", "i64:numel(out)", "i32:1000", "f32:1.0", "f32:0.0"]}
  ]
}
*/
// Fixture (examples/vector_add/op.json) for kagent check's regression gate: out = a + b, then
// 1000 dependent FMAs v = v * one + zero per element. one and zero are launch arguments (1 and 0),
// so the compiler cannot drop the chain, and each FMA returns v exactly, so the result is
// a + b. The chain makes the kernel compute-bound (16M elements x 1000 FMAs, several times the
// time of the 192 MiB it moves), so its time grows with the chain's length:
// fma_chain.cu runs 1000 FMAs, fma_chain_10pct_slower.cu the same kernel with 1100 (+10%).

extern "C" __global__ void vector_add_fma_chain(const float* __restrict__ a, const float* __restrict__ b,
                                                float* __restrict__ out, long long n, int iters, float one,
                                                float zero) {
  const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float v = a[i] + b[i];
  for (int k = 0; k < iters; ++k) v = fmaf(v, one, zero);
  out[i] = v;
}
