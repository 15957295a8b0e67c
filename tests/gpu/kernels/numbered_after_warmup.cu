/*kagent
{
  "launch": [
    {"kernel": "add_then_numbered", "grid": ["cdiv(numel(out), 256)"], "block": [256],
     "args": ["a", "b", "out", "i64:numel(out)"]}
  ]
}
*/
// Fixture: correct for its first 8 launches (the correctness trials see a good kernel), then
// out[0] holds the launch's own number (0-based) instead of a[0] + b[0]. A re-check is queued
// behind the samples it checks and read later, when newer samples have overwritten the outputs:
// the value it reports must still be the one the checked sample wrote, which this number names.

__device__ unsigned long long launches_seen;

extern "C" __global__ void add_then_numbered(const float* a, const float* b, float* out, long long n) {
  __shared__ unsigned long long launch;
  if (threadIdx.x == 0) {
    // Block 0 counts launches; other blocks only read, so the count is per launch, not per block.
    launch = blockIdx.x == 0 ? atomicAdd(&launches_seen, 1ull) : *(volatile unsigned long long*)&launches_seen;
  }
  __syncthreads();
  long long i = blockIdx.x * 256ll + threadIdx.x;
  if (i >= n) return;
  out[i] = (i == 0 && launch >= 8) ? (float)launch : a[i] + b[i];
}
