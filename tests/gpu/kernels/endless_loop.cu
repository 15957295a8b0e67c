/*kagent
{
  "launch": [
    {"kernel": "vector_add_hang", "grid": ["cdiv(numel(out),256)"], "block": [256],
     "args": ["a", "b", "out", "i64:numel(out)"]}
  ]
}
*/
// Fixture (examples/vector_add/op.json): a kernel that never terminates. It is a correct vector
// add, except that thread 0 of block 0 then spins forever: it reads the bits of a[0] through a
// volatile pointer and loops while a fresh volatile read still returns the same bits. Nothing
// writes a during the launch, so the loop never ends; the reads are volatile, so the compiler
// can neither hoist them out of the loop nor delete the loop (a loop with side effects carries no
// forward-progress assumption). Comparing bits (not floats) keeps it endless for a NaN too.
// The evaluator must kill the run at its timeout and report a hang (tier -1), and must survive it
// (the runner process is killed; the GPU recovers when its context is destroyed).

extern "C" __global__ void vector_add_hang(const float* a, const float* b, float* out, long long n) {
  long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = a[i] + b[i];
  if (i == 0) {
    const volatile unsigned int* p = reinterpret_cast<const volatile unsigned int*>(a);
    const unsigned int first = p[0];
    while (p[0] == first) {
    }
    out[0] = 0.0f;  // reached only if something changed a[0]; makes the exit observable
  }
}
