/*kagent
{
  "launch": [
    {"kernel": "add_in_clusters", "grid": ["cdiv(numel(out), 256) + 1"], "block": [256],
     "args": ["a", "b", "out", "i64:numel(out)"]}
  ]
}
*/
// Fixture (examples/vector_add/op.json): a kernel declaring clusters of 4 blocks
// (__cluster_dims__(4,1,1)) launched on a grid that is not a whole number of clusters
// (65536 + 1 blocks). Expected: a plan error naming the grid and the cluster shape, before any
// launch (the driver alone would answer CUDA_ERROR_INVALID_VALUE or a failed launch).
extern "C" __global__ void __cluster_dims__(4, 1, 1)
    add_in_clusters(const float* __restrict__ a, const float* __restrict__ b, float* __restrict__ out, long long n) {
  const long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) out[i] = a[i] + b[i];
}
