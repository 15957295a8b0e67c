/*kagent
{
  "launch": [
    {"kernel": "vector_add_half", "grid": ["cdiv(numel(out),256)"], "block": [256],
     "args": ["a", "b", "out", "i64:numel(out)"]}
  ]
}
*/
// Fixture (examples/vector_add/op.json): a kernel that writes only the first half of out.
// Elements [0, n/2) are correct; elements [n/2, n) are never written. Because the harness poisons
// outputs (NaN for floats) before every run, the unwritten half must fail correctness even when
// a previous run (or the reference) left correct values in that memory. Expected report: first
// mismatch at index n/2 = 8388608, candidate value NaN, 8388608 mismatches.

extern "C" __global__ void vector_add_half(const float* a, const float* b, float* out, long long n) {
  long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n / 2) out[i] = a[i] + b[i];
}
