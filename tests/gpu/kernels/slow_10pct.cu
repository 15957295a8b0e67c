/*kagent
{
  "launch": [
    {"kernel": "vector_add_grid_stride_slow", "grid": ["min(cdiv(numel(out),256), 8192)"], "block": [256],
     "args": ["a", "b", "out", "i64:numel(out)", "i64:3*numel(out)/10"]}
  ]
}
*/
// Fixture (examples/vector_add/op.json): a correct candidate about 10 % slower than
// examples/vector_add/cand_naive.cu, for a regression test. It is cand_naive's grid-stride loop
// (same grid, same block) plus extra memory traffic that cannot be removed: before writing
// out[i] for i < extra (3/10 of the elements in the plan), it reads out[i] through a volatile
// pointer. The kernel is bound by DRAM bandwidth: cand_naive moves 3 x 64 MiB (read a and b,
// write out) per run; the timing loop poisons out and flushes L2 before every sample, so these
// reads come from DRAM and add 0.3 x 64 MiB, i.e. +10 % of the bytes moved. The value read is
// not used (the volatile load itself must be kept). To tune the slowdown, change the last
// argument's fraction.

extern "C" __global__ void vector_add_grid_stride_slow(const float* __restrict__ a,
                                                       const float* __restrict__ b,
                                                       float* out, long long n, long long extra) {
  const long long stride = (long long)gridDim.x * blockDim.x;
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
    if (i < extra) (void)*static_cast<volatile float*>(out + i);
    out[i] = a[i] + b[i];
  }
}
