/*kagent
{
  "launch": [
    {"kernel": "vector_add_one_past", "grid": ["cdiv(numel(out),256) + 1"], "block": [256],
     "args": ["a", "b", "out", "i64:numel(out)"]}
  ]
}
*/
// Fixture (examples/vector_add/op.json): the classic off-by-one, `if (i <= n)`. Every element of
// out is right, and one float more is stored at out[n], the 4 bytes right after the buffer (64 MiB,
// a multiple of the allocation granularity: without guard bands they would be padding or the start
// of another allocation, and the kernel would pass). Expected: failure stage "bounds", a message naming output 'out' with "4 bytes
// after its end damaged (first at offset +0 past the end)", tier -1.
// The stray value is 0.0f: no canary byte is 0x00, so all 4 of its bytes count as damaged (the
// other fixtures store zeros for the same reason).

extern "C" __global__ void vector_add_one_past(const float* a, const float* b, float* out, long long n) {
  long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i <= n) out[i] = i < n ? a[i] + b[i] : 0.0f;
}
