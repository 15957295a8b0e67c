/*kagent
{"launch": [
  {"gemm": {"a": "x", "b": "matmul_weight", "trans_b": true, "d": "out", "bias": "matmul_bias",
            "m": "x.shape[0]", "n": "matmul_weight.shape[0]", "k": "x.shape[1]"}},
  {"kernel": "swish_bias_group_norm", "grid": ["cdiv(out.shape[0] * 64, 8)"], "block": [256],
   "args": ["out", "bias", "group_norm_weight", "group_norm_bias", "i64:out.shape[0] * 64", "i32:64",
            "i32:out.shape[1] / 64", "f32:0.00001"]}
]}
*/
// KernelBench level2/37_Matmul_Swish_Sum_GroupNorm: y = x @ matmul_weight^T + matmul_bias (one
// cuBLASLt step, the bias in its epilogue, IEEE fp32), then v = sigmoid(y) * y + bias and
// GroupNorm(64 groups, eps 1e-5, affine) over each row's features, in one pass: one read and one
// write of the GEMM's output where eager PyTorch makes five (sigmoid, the product, the add,
// GroupNorm's statistics and its normalisation). K is only 1024 here, so those passes are a
// good part of eager's time. The group count (64) is the model's constructor argument, which no
// tensor shape carries, so the plan states it; everything else comes from the shapes.
//
// One warp per (row, group): a row's groups are contiguous, so group w starts at w * group_size and
// its features at (w % groups) * group_size. The warp reads its group once into registers (up to
// 32 * kCache features; larger groups re-read the rest, the arithmetic is the same), then the mean,
// the biased variance around it (two passes over registers, as PyTorch's Welford gives the same
// numbers in fp32 to well within 1e-4), and writes (v - mean) * rstd * gamma + beta in place.
constexpr int kCache = 8;

__device__ __forceinline__ float swish_bias(float y, float b) {
  const float s = 1.0f / (1.0f + expf(-y));  // PyTorch's sigmoid, in IEEE fp32
  return s * y + b;
}

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

extern "C" __global__ void swish_bias_group_norm(float* __restrict__ out, const float* __restrict__ bias,
                                                 const float* __restrict__ gamma, const float* __restrict__ beta,
                                                 long long num_groups_total, int groups, int group_size, float eps) {
  const long long w = (blockIdx.x * (long long)blockDim.x + threadIdx.x) >> 5;
  const int lane = threadIdx.x & 31;
  if (w >= num_groups_total) return;  // a whole warp at once: blockDim.x is a multiple of 32
  float* o = out + w * group_size;
  const int c0 = static_cast<int>(w % groups) * group_size;

  float v[kCache];
  float sum = 0.0f;
#pragma unroll
  for (int k = 0; k < kCache; ++k) {
    const int j = lane + 32 * k;
    v[k] = j < group_size ? swish_bias(o[j], bias[c0 + j]) : 0.0f;
    sum += v[k];
  }
  for (int j = lane + 32 * kCache; j < group_size; j += 32) sum += swish_bias(o[j], bias[c0 + j]);
  const float mean = warp_sum(sum) / static_cast<float>(group_size);

  float sq = 0.0f;
#pragma unroll
  for (int k = 0; k < kCache; ++k) {
    const float d = v[k] - mean;
    if (lane + 32 * k < group_size) sq += d * d;
  }
  for (int j = lane + 32 * kCache; j < group_size; j += 32) {
    const float d = swish_bias(o[j], bias[c0 + j]) - mean;
    sq += d * d;
  }
  const float rstd = rsqrtf(warp_sum(sq) / static_cast<float>(group_size) + eps);

#pragma unroll
  for (int k = 0; k < kCache; ++k) {
    const int j = lane + 32 * k;
    if (j < group_size) o[j] = (v[k] - mean) * rstd * gamma[c0 + j] + beta[c0 + j];
  }
  for (int j = lane + 32 * kCache; j < group_size; j += 32)  // each lane only ever touches its own j
    o[j] = (swish_bias(o[j], bias[c0 + j]) - mean) * rstd * gamma[c0 + j] + beta[c0 + j];
}
