/*kagent
{"scratch": {"stats": {"dtype": "f32", "shape": ["out.shape[0] * 8", 2]}},
 "launch": [
  {"conv": {"x": "x", "w": "conv_weight", "y": "out", "bias": "conv_bias"}},
  {"kernel": "group_stats", "grid": ["out.shape[0] * 8"], "block": [1024],
   "args": ["out", "stats", "i64:numel(out) / (out.shape[0] * 8)", "f32:0.00001"]},
  {"kernel": "norm_min_clamp_dropout", "grid": ["out.shape[0] * out.shape[1]", "cdiv(numel(out) / (out.shape[0] * out.shape[1]), 4096)"],
   "block": [256],
   "args": ["out", "dropout_mult", "stats", "norm_weight", "norm_bias", "i32:out.shape[1]", "i32:out.shape[1] / 8",
            "i64:numel(out) / (out.shape[0] * out.shape[1])"]}
]}
*/
// KernelBench level2/83_Conv3d_GroupNorm_Min_Clamp_Dropout: y = conv3d(x) + conv_bias (one cuDNN
// step, the bias in it, IEEE fp32), GroupNorm with 8 groups (the model's constructor argument,
// which no tensor shape carries, so the plan states it; eps 1e-5, affine), then min(v, 0),
// clamp(v, 0, 1) and nn.Dropout(p=0.2), all in place on `out`.
//
// The dropout is active (KernelBench runs its models in training mode) and draws a fresh mask
// inside forward every call; kagent records it and hands it over as the input `dropout_mult`,
// 0 or 1/(1-p) = 1.25 per element, the factor the reference's dropout multiplies by.
//
// min(v, 0) followed by clamp(v, 0, 1) leaves 0 for every finite v, so the reference's output is
// all zeros whatever the draws (kagent flags it as degenerate): any kernel that writes zeros
// passes. This solution computes each step as the reference does anyway, so that it stays right
// for other constants and shows a drawn input in a plan.
//
// group_stats: one block per (image, group), whose elements are contiguous (the group's channels
// are adjacent planes); sums and sums of squares in fp64 (107,632 elements a group), then the mean
// and 1/sqrt(var + eps) of the biased variance, as PyTorch's GroupNorm. norm_min_clamp_dropout:
// grid.x is one (image, channel) plane, grid.y chunks of 4096 elements of it.

__device__ __forceinline__ double block_sum(double v, double* shared) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, warps = blockDim.x >> 5;
  __syncthreads();
  if (lane == 0) shared[warp] = v;
  __syncthreads();
  v = lane < warps ? shared[lane] : 0.0;
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

extern "C" __global__ void group_stats(const float* __restrict__ y, float* __restrict__ stats, long long group_numel,
                                       float eps) {
  __shared__ double shared[32];
  const float* g = y + static_cast<long long>(blockIdx.x) * group_numel;
  double s = 0.0, sq = 0.0;
  for (long long i = threadIdx.x; i < group_numel; i += blockDim.x) {
    const double v = g[i];
    s += v;
    sq += v * v;
  }
  s = block_sum(s, shared);
  sq = block_sum(sq, shared);
  if (threadIdx.x == 0) {
    const double mean = s / static_cast<double>(group_numel);
    const double var = fmax(sq / static_cast<double>(group_numel) - mean * mean, 0.0);
    stats[2 * blockIdx.x] = static_cast<float>(mean);
    stats[2 * blockIdx.x + 1] = static_cast<float>(1.0 / sqrt(var + static_cast<double>(eps)));
  }
}

extern "C" __global__ void norm_min_clamp_dropout(float* __restrict__ out, const float* __restrict__ mult,
                                                  const float* __restrict__ stats, const float* __restrict__ gamma,
                                                  const float* __restrict__ beta, int channels,
                                                  int channels_per_group, long long plane) {
  const int c = blockIdx.x % channels;
  const long long group = static_cast<long long>(blockIdx.x / channels) * (channels / channels_per_group) +
                          c / channels_per_group;
  const float mean = stats[2 * group], rstd = stats[2 * group + 1];
  const float scale = rstd * gamma[c], shift = beta[c] - mean * scale;
  float* o = out + static_cast<long long>(blockIdx.x) * plane;
  const float* m = mult + static_cast<long long>(blockIdx.x) * plane;
  const long long begin = static_cast<long long>(blockIdx.y) * 4096;
  for (long long i = begin + threadIdx.x; i < begin + 4096 && i < plane; i += blockDim.x) {
    float v = o[i] * scale + shift;  // GroupNorm
    v = fminf(v, 0.0f);              // torch.min(x, 0.0)
    v = fminf(fmaxf(v, 0.0f), 1.0f);  // torch.clamp(x, 0.0, 1.0)
    o[i] = v * m[i];                 // nn.Dropout(p=0.2): the drawn multiplier
  }
}
