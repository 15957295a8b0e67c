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
// every element of a and b to zero. Run on restored inputs it is correct, so it must PASS
// correctness, and on every later run (each correctness trial, each timing sample, the checks
// during and after timing) it is correct only if the harness restored a and b from pristine
// copies first: without the restore, the second and later runs would compute 0 + 0 = 0 and fail.
// The test therefore checks that it passes with several trials and timing samples, i.e. that
// inputs are restored before every run (and it gains nothing: its time includes the zeroing).

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
