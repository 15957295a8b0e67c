/*kagent
{
  "launch": [
    {"kernel": "vector_add_grid_stride", "grid": ["min(cdiv(numel(out),256), 8192)"], "block": [256],
     "args": ["a", "b", "out", "i64:numel(out)"]}
  ]
}
*/
// Candidate: a grid-stride loop. The grid is capped (8192 blocks of 256 threads), and each
// thread walks the array in steps of the whole grid, so any n is covered by any grid size.

extern "C" __global__ void vector_add_grid_stride(const float* __restrict__ a,
                                                  const float* __restrict__ b,
                                                  float* __restrict__ out, long long n) {
  const long long stride = (long long)gridDim.x * blockDim.x;
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
    out[i] = a[i] + b[i];
  }
}
