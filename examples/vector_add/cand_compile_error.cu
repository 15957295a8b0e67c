/*kagent
{
  "launch": [
    {"kernel": "vector_add_broken", "grid": ["cdiv(numel(out),256)"], "block": [256],
     "args": ["a", "b", "out", "i64:numel(out)"]}
  ]
}
*/
// Candidate that must NOT compile: a test fixture for compile-error reporting.
// The line marked below uses the undeclared identifier `undeclared_scale`; NVRTC reports
// "cand_compile_error.cu(17): error: identifier "undeclared_scale" is undefined".
// Tests find the expected line by the marker, so edits above it are safe.

extern "C" __global__ void vector_add_broken(const float* a, const float* b, float* out, long long n) {
  long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    out[i] = a[i] + b[i] * undeclared_scale;  // COMPILE ERROR HERE (deliberate: undeclared identifier)
  }
}
