/*kagent
{
  "launch": [
    {"kernel": "add_via_partner", "grid": ["num_sms - num_sms % 2"], "block": [256], "smem": 204800,
     "args": ["a", "b", "out", "i64:numel(out)", "i32:num_sms"]}
  ]
}
*/
// Fixture (examples/vector_add/op.json): thread-block clusters declared at compile time
// (__cluster_dims__(2,1,1)) with 200 KiB of dynamic shared memory per block, launched by a plain
// plan, one block per SM (grid: the device's SM count rounded down to even, via num_sms). Each
// block of a pair computes a + b for one tile into its own shared memory, and writes the output of
// the *other* tile from its partner's shared memory (distributed shared memory). The result is
// right only if the runner launched real 2-block clusters; the kernel traps if the grid it got is
// not the one num_sms says. Expected: correct.
#include <cooperative_groups.h>

namespace cg = cooperative_groups;

constexpr int kTile = 204800 / 4;  // floats per block's tile: all of its dynamic shared memory

extern "C" __global__ void __cluster_dims__(2, 1, 1)
    add_via_partner(const float* __restrict__ a, const float* __restrict__ b, float* __restrict__ out, long long n,
                    int num_sms) {
  extern __shared__ float tile[];
  if (gridDim.x != static_cast<unsigned>(num_sms - num_sms % 2)) __trap();
  cg::cluster_group cluster = cg::this_cluster();
  const unsigned rank = cluster.block_rank();
  const float* partner = cluster.map_shared_rank(tile, rank ^ 1u);
  const long long tiles = (n + kTile - 1) / kTile;
  const long long pairs = (tiles + 1) / 2;
  const unsigned clusters = gridDim.x / 2;
  for (long long p = blockIdx.x / 2; p < pairs; p += clusters) {
    const long long mine = (2 * p + rank) * kTile;
    for (int i = threadIdx.x; i < kTile; i += blockDim.x) {
      const long long k = mine + i;
      tile[i] = k < n ? a[k] + b[k] : 0.0f;
    }
    cluster.sync();  // both tiles written
    const long long theirs = (2 * p + (rank ^ 1u)) * kTile;
    for (int i = threadIdx.x; i < kTile; i += blockDim.x) {
      const long long k = theirs + i;
      if (k < n) out[k] = partner[i];
    }
    cluster.sync();  // the partner has read this block's tile before it is overwritten (or the block exits)
  }
}
