/*kagent
{
  "launch": [
    {"kernel": "vector_add_trap", "grid": ["cdiv(numel(out),256)"], "block": [256],
     "args": ["a", "b", "out", "i64:numel(out)"]}
  ]
}
*/
// Fixture (examples/vector_add/op.json): a kernel that traps. It is a correct vector add, except
// that one thread (global index 12345) executes __trap(), which aborts the grid with an
// illegal-instruction error (CUDA_ERROR_ILLEGAL_INSTRUCTION / "unspecified launch failure" on
// some drivers) and poisons the CUDA context. The evaluator must report a run failure (tier -1)
// naming the error and must survive it.

extern "C" __global__ void vector_add_trap(const float* a, const float* b, float* out, long long n) {
  long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = a[i] + b[i];
  if (i == 12345) __trap();
}
