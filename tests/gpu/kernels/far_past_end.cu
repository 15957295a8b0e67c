/*kagent
{
  "launch": [
    {"kernel": "vector_add_far_past", "grid": ["cdiv(numel(out),256)"], "block": [256],
     "args": ["a", "b", "out", "i64:numel(out)"]}
  ]
}
*/
// Fixture (examples/vector_add/op.json): a correct add plus one store far past the end of one
// buffer, beyond its back guard band, into memory that belongs to another of the runner's buffers.
// Where allocations lie is the driver's business, so a fixed offset could land anywhere (or fault);
// to land in another buffer every time, thread 0 takes the lowest of a, b and out and the next one
// above it, and stores 4 bytes just before that next buffer's start: at least two guard bands
// (128 KiB) past the lowest buffer's end, inside the next buffer's front band. Without guard bands
// those bytes are the tail of whatever was allocated before the next buffer, and nothing notices.
// Expected: failure stage "bounds", a message naming the next buffer (input or output) with "4 bytes
// before its start damaged", tier -1. (A store that jumps past the next buffer's front band too
// lands in its data: an output fails correctness, an input is restored before every run, and the
// runner's private copies are sealed by a digest; see src/runner/bounds_check.hpp.)

extern "C" __global__ void vector_add_far_past(const float* a, const float* b, float* out, long long n) {
  long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = a[i] + b[i];
  if (i == 0) {
    char* p[3] = {(char*)a, (char*)b, (char*)out};
    for (int x = 0; x < 3; ++x)  // sort the three by address
      for (int y = x + 1; y < 3; ++y)
        if (p[y] < p[x]) {
          char* t = p[x];
          p[x] = p[y];
          p[y] = t;
        }
    *(float*)(p[1] - 4) = 0.0f;  // p[1]: the buffer right above the lowest
  }
}
