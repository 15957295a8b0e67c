/*kagent
{
  "launch": [
    {"kernel": "vector_sub", "grid": ["cdiv(numel(out),256)"], "block": [256],
     "args": ["a", "b", "out", "i64:numel(out)"]}
  ]
}
*/
// Fixture (examples/vector_add/op.json): a kernel that is wrong everywhere. It computes
// out = a - b instead of a + b, so every element with b != 0 mismatches; b is uniform(-1,1), so
// that is (almost) all of them. The evaluator must fail correctness on the first trial and report
// the first mismatching index, both values, the mismatch count and the max abs/rel error.

extern "C" __global__ void vector_sub(const float* a, const float* b, float* out, long long n) {
  long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = a[i] - b[i];
}
