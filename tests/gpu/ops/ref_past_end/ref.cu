/*kagent
{
  "launch": [
    {"kernel": "vector_add_ref_one_past", "grid": ["cdiv(numel(out),256) + 1"], "block": [256],
     "args": ["a", "b", "out", "i64:numel(out)"]}
  ]
}
*/
// A broken native reference (tests/gpu/test_bounds.cpp): out = a + b, and out[n] too, past the end.
// A reference that writes outside its buffers is a reference failure (failure stage "reference"),
// whatever the candidate does.

extern "C" __global__ void vector_add_ref_one_past(const float* a, const float* b, float* out, long long n) {
  long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i <= n) out[i] = i < n ? a[i] + b[i] : 0.0f;
}
