// KernelBench level3/9_ResNet18 (batch 2, 3 x 224 x 224, 1000 classes), in training mode as the
// reference runs it (no .eval(): every BatchNorm normalizes with the batch's own per-channel mean
// and biased variance; eps = 1e-5, nn.BatchNorm2d's default). The plan below is written by
// 9_ResNet18_plan.py (python3 examples/kernelbench_library/level3/9_ResNet18_plan.py): the 20
// convolutions are cuDNN steps, the final linear layer a cuBLASLt step with its bias; each
// BatchNorm is two small launches (fp64 partial sums per channel and slice, then scale and shift
// per channel) whose result is applied inside the next elementwise pass (with the ReLU, and with the
// residual add and the shortcut's own BatchNorm at the end of a block). "graph": true replays the
// 80 launches as one CUDA graph: at batch 2 most launches are small, and the gaps between them are
// a large share of the time.

#include <math_constants.h>

#define SLICES 8  // per channel; the plan's `part` scratch holds 512 * SLICES * 2 doubles

__device__ __forceinline__ double warp_sum(double v) {
  for (int off = 16; off > 0; off >>= 1) v += __shfl_xor_sync(0xffffffffu, v, off);
  return v;
}

// Block (c, slice): the sum and the sum of squares of channel c's elements in its slice of the
// N x HW elements of that channel, to part[(c * SLICES + slice) * 2 + {0, 1}].
extern "C" __global__ void channel_partials(const float* __restrict__ t, double* __restrict__ part, int n, int c_count,
                                            long long hw) {
  const int c = blockIdx.x / SLICES, slice = blockIdx.x % SLICES;
  const long long m = (long long)n * hw;
  const long long begin = m * slice / SLICES, end = m * (slice + 1) / SLICES;
  double s = 0.0, q = 0.0;
  for (long long k = begin + threadIdx.x; k < end; k += blockDim.x) {
    const long long img = k / hw, pos = k - img * hw;
    const double v = t[(img * c_count + c) * hw + pos];
    s += v;
    q += v * v;
  }
  __shared__ double ss[32], qq[32];
  s = warp_sum(s);
  q = warp_sum(q);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  if (lane == 0) ss[warp] = s, qq[warp] = q;
  __syncthreads();
  if (warp == 0) {
    const int warps = (blockDim.x + 31) / 32;
    s = lane < warps ? ss[lane] : 0.0;
    q = lane < warps ? qq[lane] : 0.0;
    s = warp_sum(s);
    q = warp_sum(q);
    if (lane == 0) part[(c * SLICES + slice) * 2] = s, part[(c * SLICES + slice) * 2 + 1] = q;
  }
}

// Thread c: the channel's batch mean and biased variance from its slices, as scale and shift.
extern "C" __global__ void channel_affine(const double* __restrict__ part, const float* __restrict__ gamma,
                                          const float* __restrict__ beta, float* __restrict__ affine, int c_count,
                                          long long m) {
  const int c = threadIdx.x;
  if (c >= c_count) return;
  double s = 0.0, q = 0.0;
  for (int i = 0; i < SLICES; ++i) s += part[(c * SLICES + i) * 2], q += part[(c * SLICES + i) * 2 + 1];
  const double mean = s / (double)m;
  const double var = fmax(q / (double)m - mean * mean, 0.0);
  const double scale = (double)gamma[c] / sqrt(var + 1e-5);
  affine[c] = (float)scale;
  affine[c_count + c] = (float)((double)beta[c] - mean * scale);
}

// The elementwise passes: 4 elements a thread, element i of channel (i / hw) % c.
__device__ __forceinline__ int channel_of(long long i, long long hw, int c_count) {
  return (int)((i / hw) % c_count);
}

// t = relu(t * scale[c] + shift[c]), in place.
extern "C" __global__ void affine_relu(float* __restrict__ t, const float* __restrict__ affine, long long n,
                                       int c_count, long long hw) {
  const long long i0 = (blockIdx.x * (long long)blockDim.x + threadIdx.x) * 4;
  for (long long i = i0; i < i0 + 4 && i < n; ++i) {
    const int c = channel_of(i, hw, c_count);
    t[i] = fmaxf(fmaf(t[i], affine[c], affine[c_count + c]), 0.0f);
  }
}

// The end of a block whose shortcut is the identity: out = relu(out * scale[c] + shift[c] + identity).
extern "C" __global__ void affine_add_relu(float* __restrict__ out, const float* __restrict__ affine,
                                           const float* __restrict__ identity, long long n, int c_count, long long hw) {
  const long long i0 = (blockIdx.x * (long long)blockDim.x + threadIdx.x) * 4;
  for (long long i = i0; i < i0 + 4 && i < n; ++i) {
    const int c = channel_of(i, hw, c_count);
    out[i] = fmaxf(fmaf(out[i], affine[c], affine[c_count + c]) + identity[i], 0.0f);
  }
}

// The end of a block with a downsampling shortcut (1x1 convolution + BatchNorm):
// out = relu(out * scale2[c] + shift2[c] + shortcut * scale3[c] + shift3[c]).
extern "C" __global__ void add_affine_relu(float* __restrict__ out, const float* __restrict__ affine2,
                                           const float* __restrict__ shortcut, const float* __restrict__ affine3,
                                           long long n, int c_count, long long hw) {
  const long long i0 = (blockIdx.x * (long long)blockDim.x + threadIdx.x) * 4;
  for (long long i = i0; i < i0 + 4 && i < n; ++i) {
    const int c = channel_of(i, hw, c_count);
    out[i] = fmaxf(fmaf(out[i], affine2[c], affine2[c_count + c]) + fmaf(shortcut[i], affine3[c], affine3[c_count + c]),
                   0.0f);
  }
}

// nn.MaxPool2d(3, stride 2, padding 1) over planes [planes, h, w] -> [planes, ho, wo]; the padding
// never wins (every window holds at least one real element).
extern "C" __global__ void max_pool_3x3_s2(const float* __restrict__ in, float* __restrict__ out, int planes, int h,
                                           int w, int ho, int wo) {
  const long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i >= (long long)planes * ho * wo) return;
  const int ox = (int)(i % wo), oy = (int)((i / wo) % ho);
  const long long plane = i / ((long long)ho * wo);
  const float* p = in + plane * h * w;
  float m = -CUDART_INF_F;
  for (int ky = 0; ky < 3; ++ky) {
    const int y = 2 * oy - 1 + ky;
    if (y < 0 || y >= h) continue;
    for (int kx = 0; kx < 3; ++kx) {
      const int x = 2 * ox - 1 + kx;
      if (x >= 0 && x < w) m = fmaxf(m, p[y * w + x]);
    }
  }
  out[i] = m;
}

// nn.AdaptiveAvgPool2d((1, 1)) + flatten: block r averages plane r's hw elements into out[r].
extern "C" __global__ void mean_pool(const float* __restrict__ in, float* __restrict__ out, int hw) {
  const float* p = in + (long long)blockIdx.x * hw;
  float s = 0.0f;
  for (int i = threadIdx.x; i < hw; i += blockDim.x) s += p[i];
  for (int off = 16; off > 0; off >>= 1) s += __shfl_xor_sync(0xffffffffu, s, off);
  __shared__ float warp_sums[32];
  if (threadIdx.x % 32 == 0) warp_sums[threadIdx.x / 32] = s;
  __syncthreads();
  if (threadIdx.x == 0) {
    float t = 0.0f;
    for (int i = 0; i < (int)(blockDim.x + 31) / 32; ++i) t += warp_sums[i];
    out[blockIdx.x] = t / (float)hw;
  }
}

/*kagent
{
  "scratch": {"part": {"dtype": "f64", "shape": [8192]}, "aff_a": {"dtype": "f32", "shape": [1024]}, "aff_b": {"dtype": "f32", "shape": [1024]}, "act1": {"dtype": "f32", "shape": [2, 64, 112, 112]}, "act2": {"dtype": "f32", "shape": [2, 64, 56, 56]}, "act3": {"dtype": "f32", "shape": [2, 64, 56, 56]}, "act4": {"dtype": "f32", "shape": [2, 64, 56, 56]}, "act5": {"dtype": "f32", "shape": [2, 64, 56, 56]}, "act6": {"dtype": "f32", "shape": [2, 64, 56, 56]}, "act7": {"dtype": "f32", "shape": [2, 128, 28, 28]}, "act8": {"dtype": "f32", "shape": [2, 128, 28, 28]}, "act9": {"dtype": "f32", "shape": [2, 128, 28, 28]}, "act10": {"dtype": "f32", "shape": [2, 128, 28, 28]}, "act11": {"dtype": "f32", "shape": [2, 128, 28, 28]}, "act12": {"dtype": "f32", "shape": [2, 256, 14, 14]}, "act13": {"dtype": "f32", "shape": [2, 256, 14, 14]}, "act14": {"dtype": "f32", "shape": [2, 256, 14, 14]}, "act15": {"dtype": "f32", "shape": [2, 256, 14, 14]}, "act16": {"dtype": "f32", "shape": [2, 256, 14, 14]}, "act17": {"dtype": "f32", "shape": [2, 512, 7, 7]}, "act18": {"dtype": "f32", "shape": [2, 512, 7, 7]}, "act19": {"dtype": "f32", "shape": [2, 512, 7, 7]}, "act20": {"dtype": "f32", "shape": [2, 512, 7, 7]}, "act21": {"dtype": "f32", "shape": [2, 512, 7, 7]}, "pooled": {"dtype": "f32", "shape": [2, 512]}},
  "launch": [
    {"conv": {"x": "x", "w": "conv1_weight", "y": "act1", "stride": 2, "padding": 3}},
    {"kernel": "channel_partials", "grid": [512], "block": [256], "args": ["act1", "part", "i32:2", "i32:64", "i64:12544"]},
    {"kernel": "channel_affine", "grid": [1], "block": [64], "args": ["part", "bn1_weight", "bn1_bias", "aff_a", "i32:64", "i64:25088"]},
    {"kernel": "affine_relu", "grid": [1568], "block": [256], "args": ["act1", "aff_a", "i64:1605632", "i32:64", "i64:12544"]},
    {"kernel": "max_pool_3x3_s2", "grid": [1568], "block": [256], "args": ["act1", "act2", "i32:128", "i32:112", "i32:112", "i32:56", "i32:56"]},
    {"conv": {"x": "act2", "w": "layer1_0_conv1_weight", "y": "act3", "stride": 1, "padding": 1}},
    {"kernel": "channel_partials", "grid": [512], "block": [256], "args": ["act3", "part", "i32:2", "i32:64", "i64:3136"]},
    {"kernel": "channel_affine", "grid": [1], "block": [64], "args": ["part", "layer1_0_bn1_weight", "layer1_0_bn1_bias", "aff_a", "i32:64", "i64:6272"]},
    {"kernel": "affine_relu", "grid": [392], "block": [256], "args": ["act3", "aff_a", "i64:401408", "i32:64", "i64:3136"]},
    {"conv": {"x": "act3", "w": "layer1_0_conv2_weight", "y": "act4", "stride": 1, "padding": 1}},
    {"kernel": "channel_partials", "grid": [512], "block": [256], "args": ["act4", "part", "i32:2", "i32:64", "i64:3136"]},
    {"kernel": "channel_affine", "grid": [1], "block": [64], "args": ["part", "layer1_0_bn2_weight", "layer1_0_bn2_bias", "aff_a", "i32:64", "i64:6272"]},
    {"kernel": "affine_add_relu", "grid": [392], "block": [256], "args": ["act4", "aff_a", "act2", "i64:401408", "i32:64", "i64:3136"]},
    {"conv": {"x": "act4", "w": "layer1_1_conv1_weight", "y": "act5", "stride": 1, "padding": 1}},
    {"kernel": "channel_partials", "grid": [512], "block": [256], "args": ["act5", "part", "i32:2", "i32:64", "i64:3136"]},
    {"kernel": "channel_affine", "grid": [1], "block": [64], "args": ["part", "layer1_1_bn1_weight", "layer1_1_bn1_bias", "aff_a", "i32:64", "i64:6272"]},
    {"kernel": "affine_relu", "grid": [392], "block": [256], "args": ["act5", "aff_a", "i64:401408", "i32:64", "i64:3136"]},
    {"conv": {"x": "act5", "w": "layer1_1_conv2_weight", "y": "act6", "stride": 1, "padding": 1}},
    {"kernel": "channel_partials", "grid": [512], "block": [256], "args": ["act6", "part", "i32:2", "i32:64", "i64:3136"]},
    {"kernel": "channel_affine", "grid": [1], "block": [64], "args": ["part", "layer1_1_bn2_weight", "layer1_1_bn2_bias", "aff_a", "i32:64", "i64:6272"]},
    {"kernel": "affine_add_relu", "grid": [392], "block": [256], "args": ["act6", "aff_a", "act4", "i64:401408", "i32:64", "i64:3136"]},
    {"conv": {"x": "act6", "w": "layer2_0_conv1_weight", "y": "act7", "stride": 2, "padding": 1}},
    {"kernel": "channel_partials", "grid": [1024], "block": [256], "args": ["act7", "part", "i32:2", "i32:128", "i64:784"]},
    {"kernel": "channel_affine", "grid": [1], "block": [128], "args": ["part", "layer2_0_bn1_weight", "layer2_0_bn1_bias", "aff_a", "i32:128", "i64:1568"]},
    {"kernel": "affine_relu", "grid": [196], "block": [256], "args": ["act7", "aff_a", "i64:200704", "i32:128", "i64:784"]},
    {"conv": {"x": "act7", "w": "layer2_0_conv2_weight", "y": "act8", "stride": 1, "padding": 1}},
    {"kernel": "channel_partials", "grid": [1024], "block": [256], "args": ["act8", "part", "i32:2", "i32:128", "i64:784"]},
    {"kernel": "channel_affine", "grid": [1], "block": [128], "args": ["part", "layer2_0_bn2_weight", "layer2_0_bn2_bias", "aff_a", "i32:128", "i64:1568"]},
    {"conv": {"x": "act6", "w": "layer2_0_downsample_0_weight", "y": "act9", "stride": 2}},
    {"kernel": "channel_partials", "grid": [1024], "block": [256], "args": ["act9", "part", "i32:2", "i32:128", "i64:784"]},
    {"kernel": "channel_affine", "grid": [1], "block": [128], "args": ["part", "layer2_0_downsample_1_weight", "layer2_0_downsample_1_bias", "aff_b", "i32:128", "i64:1568"]},
    {"kernel": "add_affine_relu", "grid": [196], "block": [256], "args": ["act8", "aff_a", "act9", "aff_b", "i64:200704", "i32:128", "i64:784"]},
    {"conv": {"x": "act8", "w": "layer2_1_conv1_weight", "y": "act10", "stride": 1, "padding": 1}},
    {"kernel": "channel_partials", "grid": [1024], "block": [256], "args": ["act10", "part", "i32:2", "i32:128", "i64:784"]},
    {"kernel": "channel_affine", "grid": [1], "block": [128], "args": ["part", "layer2_1_bn1_weight", "layer2_1_bn1_bias", "aff_a", "i32:128", "i64:1568"]},
    {"kernel": "affine_relu", "grid": [196], "block": [256], "args": ["act10", "aff_a", "i64:200704", "i32:128", "i64:784"]},
    {"conv": {"x": "act10", "w": "layer2_1_conv2_weight", "y": "act11", "stride": 1, "padding": 1}},
    {"kernel": "channel_partials", "grid": [1024], "block": [256], "args": ["act11", "part", "i32:2", "i32:128", "i64:784"]},
    {"kernel": "channel_affine", "grid": [1], "block": [128], "args": ["part", "layer2_1_bn2_weight", "layer2_1_bn2_bias", "aff_a", "i32:128", "i64:1568"]},
    {"kernel": "affine_add_relu", "grid": [196], "block": [256], "args": ["act11", "aff_a", "act8", "i64:200704", "i32:128", "i64:784"]},
    {"conv": {"x": "act11", "w": "layer3_0_conv1_weight", "y": "act12", "stride": 2, "padding": 1}},
    {"kernel": "channel_partials", "grid": [2048], "block": [256], "args": ["act12", "part", "i32:2", "i32:256", "i64:196"]},
    {"kernel": "channel_affine", "grid": [1], "block": [256], "args": ["part", "layer3_0_bn1_weight", "layer3_0_bn1_bias", "aff_a", "i32:256", "i64:392"]},
    {"kernel": "affine_relu", "grid": [98], "block": [256], "args": ["act12", "aff_a", "i64:100352", "i32:256", "i64:196"]},
    {"conv": {"x": "act12", "w": "layer3_0_conv2_weight", "y": "act13", "stride": 1, "padding": 1}},
    {"kernel": "channel_partials", "grid": [2048], "block": [256], "args": ["act13", "part", "i32:2", "i32:256", "i64:196"]},
    {"kernel": "channel_affine", "grid": [1], "block": [256], "args": ["part", "layer3_0_bn2_weight", "layer3_0_bn2_bias", "aff_a", "i32:256", "i64:392"]},
    {"conv": {"x": "act11", "w": "layer3_0_downsample_0_weight", "y": "act14", "stride": 2}},
    {"kernel": "channel_partials", "grid": [2048], "block": [256], "args": ["act14", "part", "i32:2", "i32:256", "i64:196"]},
    {"kernel": "channel_affine", "grid": [1], "block": [256], "args": ["part", "layer3_0_downsample_1_weight", "layer3_0_downsample_1_bias", "aff_b", "i32:256", "i64:392"]},
    {"kernel": "add_affine_relu", "grid": [98], "block": [256], "args": ["act13", "aff_a", "act14", "aff_b", "i64:100352", "i32:256", "i64:196"]},
    {"conv": {"x": "act13", "w": "layer3_1_conv1_weight", "y": "act15", "stride": 1, "padding": 1}},
    {"kernel": "channel_partials", "grid": [2048], "block": [256], "args": ["act15", "part", "i32:2", "i32:256", "i64:196"]},
    {"kernel": "channel_affine", "grid": [1], "block": [256], "args": ["part", "layer3_1_bn1_weight", "layer3_1_bn1_bias", "aff_a", "i32:256", "i64:392"]},
    {"kernel": "affine_relu", "grid": [98], "block": [256], "args": ["act15", "aff_a", "i64:100352", "i32:256", "i64:196"]},
    {"conv": {"x": "act15", "w": "layer3_1_conv2_weight", "y": "act16", "stride": 1, "padding": 1}},
    {"kernel": "channel_partials", "grid": [2048], "block": [256], "args": ["act16", "part", "i32:2", "i32:256", "i64:196"]},
    {"kernel": "channel_affine", "grid": [1], "block": [256], "args": ["part", "layer3_1_bn2_weight", "layer3_1_bn2_bias", "aff_a", "i32:256", "i64:392"]},
    {"kernel": "affine_add_relu", "grid": [98], "block": [256], "args": ["act16", "aff_a", "act13", "i64:100352", "i32:256", "i64:196"]},
    {"conv": {"x": "act16", "w": "layer4_0_conv1_weight", "y": "act17", "stride": 2, "padding": 1}},
    {"kernel": "channel_partials", "grid": [4096], "block": [256], "args": ["act17", "part", "i32:2", "i32:512", "i64:49"]},
    {"kernel": "channel_affine", "grid": [1], "block": [512], "args": ["part", "layer4_0_bn1_weight", "layer4_0_bn1_bias", "aff_a", "i32:512", "i64:98"]},
    {"kernel": "affine_relu", "grid": [49], "block": [256], "args": ["act17", "aff_a", "i64:50176", "i32:512", "i64:49"]},
    {"conv": {"x": "act17", "w": "layer4_0_conv2_weight", "y": "act18", "stride": 1, "padding": 1}},
    {"kernel": "channel_partials", "grid": [4096], "block": [256], "args": ["act18", "part", "i32:2", "i32:512", "i64:49"]},
    {"kernel": "channel_affine", "grid": [1], "block": [512], "args": ["part", "layer4_0_bn2_weight", "layer4_0_bn2_bias", "aff_a", "i32:512", "i64:98"]},
    {"conv": {"x": "act16", "w": "layer4_0_downsample_0_weight", "y": "act19", "stride": 2}},
    {"kernel": "channel_partials", "grid": [4096], "block": [256], "args": ["act19", "part", "i32:2", "i32:512", "i64:49"]},
    {"kernel": "channel_affine", "grid": [1], "block": [512], "args": ["part", "layer4_0_downsample_1_weight", "layer4_0_downsample_1_bias", "aff_b", "i32:512", "i64:98"]},
    {"kernel": "add_affine_relu", "grid": [49], "block": [256], "args": ["act18", "aff_a", "act19", "aff_b", "i64:50176", "i32:512", "i64:49"]},
    {"conv": {"x": "act18", "w": "layer4_1_conv1_weight", "y": "act20", "stride": 1, "padding": 1}},
    {"kernel": "channel_partials", "grid": [4096], "block": [256], "args": ["act20", "part", "i32:2", "i32:512", "i64:49"]},
    {"kernel": "channel_affine", "grid": [1], "block": [512], "args": ["part", "layer4_1_bn1_weight", "layer4_1_bn1_bias", "aff_a", "i32:512", "i64:98"]},
    {"kernel": "affine_relu", "grid": [49], "block": [256], "args": ["act20", "aff_a", "i64:50176", "i32:512", "i64:49"]},
    {"conv": {"x": "act20", "w": "layer4_1_conv2_weight", "y": "act21", "stride": 1, "padding": 1}},
    {"kernel": "channel_partials", "grid": [4096], "block": [256], "args": ["act21", "part", "i32:2", "i32:512", "i64:49"]},
    {"kernel": "channel_affine", "grid": [1], "block": [512], "args": ["part", "layer4_1_bn2_weight", "layer4_1_bn2_bias", "aff_a", "i32:512", "i64:98"]},
    {"kernel": "affine_add_relu", "grid": [49], "block": [256], "args": ["act21", "aff_a", "act18", "i64:50176", "i32:512", "i64:49"]},
    {"kernel": "mean_pool", "grid": [1024], "block": [64], "args": ["act21", "pooled", "i32:49"]},
    {"gemm": {"a": "pooled", "b": "fc_weight", "trans_b": true, "d": "out", "bias": "fc_bias", "m": "pooled.shape[0]", "n": "fc_weight.shape[0]", "k": "pooled.shape[1]"}}
  ],
  "graph": true
}
*/
