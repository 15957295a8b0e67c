/*kagent
{
  "launch": [
    {"kernel": "vector_add_4params", "grid": ["cdiv(numel(out),256)"], "block": [256],
     "args": ["a", "b", "out"]}
  ]
}
*/
// Fixture (examples/vector_add/op.json): a plan that does not match its kernel. The kernel is a
// correct vector add with 4 parameters (a, b, out, n), but the plan's only launch passes 3
// arguments (n is missing). The plan check (offline from the cubin, and in the runner from
// cuFuncGetParamInfo) must reject it before anything runs, with an error that names the launch
// and the argument list (launch[0].args), the kernel vector_add_4params, and the mismatch
// (4 parameters, 3 arguments); `kagent compile --op` already does so offline.

extern "C" __global__ void vector_add_4params(const float* a, const float* b, float* out, long long n) {
  long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = a[i] + b[i];
}
