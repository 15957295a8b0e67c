/*kagent
{
  "launch": [
    {"kernel": "vector_add_one_before", "grid": ["cdiv(numel(out),256)"], "block": [256],
     "args": ["a", "b", "out", "i64:numel(out)"]}
  ]
}
*/
// Fixture (examples/vector_add/op.json): a correct add whose thread 0 also stores out[-1] (an index
// computed as i - 1 without a guard, say): the 4 bytes right before the buffer. Expected: failure
// stage "bounds", a message naming output 'out' with "4 bytes before its start damaged (last at
// offset -1 before the start)", tier -1.

extern "C" __global__ void vector_add_one_before(const float* a, const float* b, float* out, long long n) {
  long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = a[i] + b[i];
  if (i == 0) out[i - 1] = 0.0f;
}
