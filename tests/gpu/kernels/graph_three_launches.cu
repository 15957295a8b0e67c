// out = a + b in three launches of one kernel, a third of the elements each, replayed as a CUDA
// graph ("graph": true): the profile's hardware counters must come back, one row per launch, with
// the note that the counters' pass ran the launches without the graph.
/*kagent
{"graph": true,
 "launch": [
  {"kernel": "add_range", "grid": ["cdiv(numel(out), 3 * 256) + 1"], "block": [256],
   "args": ["a", "b", "out", "i64:0", "i64:numel(out) / 3"]},
  {"kernel": "add_range", "grid": ["cdiv(numel(out), 3 * 256) + 1"], "block": [256],
   "args": ["a", "b", "out", "i64:numel(out) / 3", "i64:2 * numel(out) / 3"]},
  {"kernel": "add_range", "grid": ["cdiv(numel(out), 3 * 256) + 1"], "block": [256],
   "args": ["a", "b", "out", "i64:2 * numel(out) / 3", "i64:numel(out)"]}
]}
*/
extern "C" __global__ void add_range(const float* a, const float* b, float* out, long long begin, long long end) {
  const long long i = begin + (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < end) out[i] = a[i] + b[i];
}
