/*kagent
{
  "launch": [
    {"kernel": "add_and_print", "grid": ["cdiv(numel(a), 256)"], "block": [256],
     "args": ["a", "b", "out", "i32:numel(a)"]}
  ]
}
*/
// A correct vector add that also calls printf from device code, as a model debugging its kernel
// would. The driver flushes device printf to the runner's fd 1; that must not corrupt the
// runner's replies (they have a channel of their own), so the evaluation passes.
extern "C" __global__ void add_and_print(const float* a, const float* b, float* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i == 0) printf("{\"id\": 1, \"ok\": true, \"debug\": %f}\n", a[0]);
  if (i < n) out[i] = a[i] + b[i];
}
