/*kagent
{
  "launch": [
    {"kernel": "vector_add", "grid": ["cdiv(numel(out),256)"], "block": [256],
     "args": ["a", "b", "out", "i64:numel(out)"]},
    {"kernel": "zero_inputs", "grid": ["cdiv(numel(out),256)"], "block": [256],
     "args": ["a", "b", "i64:numel(out)"]}
  ]
}
*/
// Fixture (examples/vector_add/op.json): a candidate that writes its inputs (reward hack 2 of
// docs/measurement.md). The first launch computes out = a + b correctly; the second launch then sets
// every element of a and b to zero. Each correctness trial makes fresh inputs, so it passes the
// trials; the timed samples share one copy of the inputs, restored once and sealed, so the zeroed
// inputs are found after the timing and it fails at stage "inputs" (docs/measurement.md, Timing).

extern "C" __global__ void vector_add(const float* a, const float* b, float* out, long long n) {
  long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = a[i] + b[i];
}

extern "C" __global__ void zero_inputs(float* a, float* b, long long n) {
  long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    a[i] = 0.0f;
    b[i] = 0.0f;
  }
}
