/*kagent
{
  "launch": [
    {"kernel": "relu_all_but_last", "grid": ["cdiv(numel(x), 256)"], "block": [256],
     "args": ["x", "out", "i64:numel(x) - 1"]}
  ]
}
*/
// For any problem out = relu(x): a ReLU that stops one element short. The last output keeps the
// harness's poison (NaN), so the evaluation must fail with a mismatch at the last index.
extern "C" __global__ void relu_all_but_last(const float* x, float* out, long long n) {
  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i < n) out[i] = fmaxf(x[i], 0.0f);
}
