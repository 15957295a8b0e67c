/*kagent
{
  "launch": [
    {"kernel": "add_then_stale", "grid": ["cdiv(numel(out), 256)"], "block": [256],
     "args": ["a", "b", "out", "i64:numel(out)"]}
  ]
}
*/
// Fixture: correct for its first 8 launches (the correctness trials see a good kernel), wrong
// from then on: out[0] is left unwritten. A device-global launch counter survives across calls
// in the module, as a cache of earlier results would. Only the re-checks during and after timing
// can catch it, so the evaluator must report failure stage "re-check".

__device__ unsigned long long launches_seen;

extern "C" __global__ void add_then_stale(const float* a, const float* b, float* out, long long n) {
  __shared__ unsigned long long launch;
  if (threadIdx.x == 0) {
    // Block 0 counts launches; other blocks only read, so the count is per launch, not per block.
    launch = blockIdx.x == 0 ? atomicAdd(&launches_seen, 1ull) : *(volatile unsigned long long*)&launches_seen;
  }
  __syncthreads();
  long long i = blockIdx.x * 256ll + threadIdx.x;
  if (i >= n) return;
  if (i == 0 && launch >= 8) return;  // from the 9th launch on, out[0] keeps the poison
  out[i] = a[i] + b[i];
}
