/*kagent
{
  "launch": [
    {"kernel": "rmsnorm_dim1",
     "grid": ["cdiv(numel(x)/(x.shape[0]*x.shape[1]),256)", "x.shape[0]"], "block": [256],
     "args": ["x", "out", "i64:x.shape[1]", "i64:numel(x)/(x.shape[0]*x.shape[1])"]}
  ]
}
*/
// KernelBench level1/36_RMSNorm_: out = x / sqrt(mean(x^2, dim=1, keepdim=True) + eps),
// x [B=112, C=64, 512, 512] f32 (7.5 GB). eps = 1e-5 (the module's default) is hard-coded.
// The statistic runs over the feature dim C, whose stride is S = 512*512 = 262144, for each
// of the B*S spatial positions. Each thread owns one position (b, s): a warp covers 32
// consecutive s, so every load/store instruction of a warp is one coalesced 128-byte
// segment. With C == 64 the thread loads its 64 values into registers (64 independent loads
// in flight per thread: plenty of memory-level parallelism), sums the squares, and writes
// the 64 outputs from registers, so x is read exactly once and out written once (the
// minimum traffic), with cache-streaming hints. Any other C falls back to a two-pass loop
// (reads x twice). 64-bit offsets throughout (numel is 1.9e9). Grid (S/256, B): B <= 65535.

#define EPS 1e-5f
#define C_FAST 64  // the feature count of this problem: values kept in registers

extern "C" __global__ void __launch_bounds__(256)
rmsnorm_dim1(const float* __restrict__ x, float* __restrict__ out, long long C, long long S) {
  const long long s = (long long)blockIdx.x * blockDim.x + threadIdx.x;  // spatial position
  if (s >= S) return;  // no block-level synchronization below, so an early exit is safe
  const long long b = blockIdx.y;
  const float* xp = x + b * C * S + s;  // &x[b, 0, s]
  float* op = out + b * C * S + s;

  if (C == C_FAST) {
    float v[C_FAST];
#pragma unroll
    for (int c = 0; c < C_FAST; ++c) v[c] = __ldcs(xp + c * S);
    float acc[4] = {0.0f, 0.0f, 0.0f, 0.0f};  // 4 short chains instead of one of 64
#pragma unroll
    for (int c = 0; c < C_FAST; ++c) acc[c % 4] = fmaf(v[c], v[c], acc[c % 4]);
    const float mean = ((acc[0] + acc[1]) + (acc[2] + acc[3])) * (1.0f / C_FAST);
    const float inv_rms = 1.0f / sqrtf(mean + EPS);
#pragma unroll
    for (int c = 0; c < C_FAST; ++c) __stcs(op + c * S, v[c] * inv_rms);
  } else {
    // Generic C: sum of squares, then a second read to normalize.
    float acc = 0.0f;
    for (long long c = 0; c < C; ++c) {
      const float v = xp[c * S];
      acc = fmaf(v, v, acc);
    }
    const float inv_rms = 1.0f / sqrtf(acc / (float)C + EPS);
    for (long long c = 0; c < C; ++c) op[c * S] = xp[c * S] * inv_rms;
  }
}
