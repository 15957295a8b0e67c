/*kagent
{
  "launch": [
    {"kernel": "vector_add_wild_store", "grid": ["cdiv(numel(out),256)"], "block": [256],
     "args": ["a", "b", "out", "i64:numel(out)"]}
  ]
}
*/
// Fixture (examples/vector_add/op.json): a kernel that faults with an illegal address. It is a
// correct vector add, except that thread 0 of block 0 also stores through a wild pointer,
// out + 2^40 floats (4 TiB past the buffer: never mapped). The store is volatile so the compiler
// must keep it. The launch fails with CUDA_ERROR_ILLEGAL_ADDRESS, which poisons the CUDA
// context: the evaluator must report a run failure (tier -1) naming the error, and must survive
// it (the runner process dies or is discarded; the harness does not).

extern "C" __global__ void vector_add_wild_store(const float* a, const float* b, float* out, long long n) {
  long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = a[i] + b[i];
  if (i == 0) {
    volatile float* wild = out + (1ll << 40);
    *wild = 1.0f;
  }
}
