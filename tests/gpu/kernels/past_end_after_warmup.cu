/*kagent
{
  "launch": [
    {"kernel": "add_then_past_end", "grid": ["cdiv(numel(out), 256)"], "block": [256],
     "args": ["a", "b", "out", "i64:numel(out)"]}
  ]
}
*/
// Fixture (examples/vector_add/op.json): correct and within bounds for its first 8 launches (the
// correctness trials see a clean kernel), then also stores out[n], past the end, on every launch.
// Only the check after the timing can catch it. Expected: failure stage "bounds", a message naming
// output 'out' and "the timing", tier -1.

__device__ unsigned long long launches_seen;

extern "C" __global__ void add_then_past_end(const float* a, const float* b, float* out, long long n) {
  __shared__ unsigned long long launch;
  if (threadIdx.x == 0) {
    // Block 0 counts launches; other blocks only read, so the count is per launch, not per block.
    launch = blockIdx.x == 0 ? atomicAdd(&launches_seen, 1ull) : *(volatile unsigned long long*)&launches_seen;
  }
  __syncthreads();
  long long i = blockIdx.x * 256ll + threadIdx.x;
  if (i >= n) return;
  out[i] = a[i] + b[i];
  if (i == 0 && launch >= 8) out[n] = 0.0f;
}
