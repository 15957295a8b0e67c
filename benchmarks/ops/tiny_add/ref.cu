/*kagent
{
  "launch": [
    {"kernel": "vector_add_ref", "grid": ["cdiv(numel(out),256)"], "block": [256],
     "args": ["a", "b", "out", "i64:numel(out)"]}
  ]
}
*/
// Reference for vector_add: out[i] = a[i] + b[i].
// One element per thread, nothing clever, so that it is obviously correct.

extern "C" __global__ void vector_add_ref(const float* a, const float* b, float* out, long long n) {
  long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = a[i] + b[i];
}
