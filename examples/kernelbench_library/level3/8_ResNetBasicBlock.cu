/*kagent
{"scratch": {
   "h":        {"dtype": "f32", "shape": ["out.shape[0]", "out.shape[1]", "out.shape[2]", "out.shape[3]"]},
   "shortcut": {"dtype": "f32", "shape": ["out.shape[0]", "out.shape[1]", "out.shape[2]", "out.shape[3]"]},
   "part1": {"dtype": "f64", "shape": ["out.shape[1] * 16"]},
   "part2": {"dtype": "f64", "shape": ["out.shape[1] * 16"]},
   "part3": {"dtype": "f64", "shape": ["out.shape[1] * 16"]},
   "affine1": {"dtype": "f32", "shape": ["out.shape[1] * 2"]},
   "affine2": {"dtype": "f32", "shape": ["out.shape[1] * 2"]},
   "affine3": {"dtype": "f32", "shape": ["out.shape[1] * 2"]}},
 "launch": [
  {"conv": {"x": "x", "w": "conv1_weight", "y": "h", "stride": 1, "padding": 1}},
  {"conv": {"x": "x", "w": "downsample_0_weight", "y": "shortcut", "stride": 1}},
  {"kernel": "channel_partials", "grid": ["out.shape[1] * 8"], "block": [512],
   "args": ["h", "part1", "i32:out.shape[0]", "i32:out.shape[1]", "i64:out.shape[2] * out.shape[3]"]},
  {"kernel": "channel_affine", "grid": [1], "block": ["out.shape[1]"],
   "args": ["part1", "bn1_weight", "bn1_bias", "affine1", "i32:out.shape[1]", "i64:numel(out) / out.shape[1]"]},
  {"kernel": "affine_relu", "grid": ["cdiv(numel(out), 1024)"], "block": [256],
   "args": ["h", "affine1", "i64:numel(out)", "i32:out.shape[1]", "i64:out.shape[2] * out.shape[3]"]},
  {"conv": {"x": "h", "w": "conv2_weight", "y": "out", "stride": 1, "padding": 1}},
  {"kernel": "channel_partials", "grid": ["out.shape[1] * 8"], "block": [512],
   "args": ["out", "part2", "i32:out.shape[0]", "i32:out.shape[1]", "i64:out.shape[2] * out.shape[3]"]},
  {"kernel": "channel_partials", "grid": ["out.shape[1] * 8"], "block": [512],
   "args": ["shortcut", "part3", "i32:out.shape[0]", "i32:out.shape[1]", "i64:out.shape[2] * out.shape[3]"]},
  {"kernel": "channel_affine", "grid": [1], "block": ["out.shape[1]"],
   "args": ["part2", "bn2_weight", "bn2_bias", "affine2", "i32:out.shape[1]", "i64:numel(out) / out.shape[1]"]},
  {"kernel": "channel_affine", "grid": [1], "block": ["out.shape[1]"],
   "args": ["part3", "downsample_1_weight", "downsample_1_bias", "affine3", "i32:out.shape[1]",
            "i64:numel(out) / out.shape[1]"]},
  {"kernel": "add_affine_relu", "grid": ["cdiv(numel(out), 1024)"], "block": [256],
   "args": ["out", "affine2", "shortcut", "affine3", "i64:numel(out)", "i32:out.shape[1]",
            "i64:out.shape[2] * out.shape[3]"]}
]}
*/
// KernelBench level3/8_ResNetBasicBlock (stride 1, 3 -> 64 channels, 10 x 224 x 224):
//   out = relu(bn2(conv2(relu(bn1(conv1(x))))) + bn_d(conv_d(x)))
// The model runs in training mode (kagent's reference server, like KernelBench, does not call
// .eval()), so every BatchNorm normalizes with the batch's own per-channel mean and biased
// variance; the running statistics do not enter the output. The three convolutions are cuDNN
// steps (no bias, as in the model). Each BatchNorm is two small launches: partial sums and sums
// of squares per (channel, slice) in fp64 (8 slices per channel: 512 blocks fill the GPU), then
// one thread per channel folding them into scale = gamma / sqrt(var + eps) and shift = beta -
// mean * scale. The normalization is fused into the passes that follow: bn1 with its ReLU in
// place on h; bn2, the shortcut's BatchNorm, the residual add and the last ReLU in one pass that
// writes out. eps = 1e-5, nn.BatchNorm2d's default.

#define SLICES 8  // per channel; the plan's part* scratch holds C * SLICES * 2 doubles

__device__ __forceinline__ double warp_sum(double v) {
  for (int off = 16; off > 0; off >>= 1) v += __shfl_xor_sync(0xffffffffu, v, off);
  return v;
}

// Block (c, slice): the sum and the sum of squares of channel c's elements in its slice of the
// N x HW elements of that channel, to part[(c * SLICES + slice) * 2 + {0, 1}].
extern "C" __global__ void channel_partials(const float* __restrict__ t, double* __restrict__ part, int n, int c_count,
                                            long long hw) {
  const int c = blockIdx.x / SLICES, slice = blockIdx.x % SLICES;
  const long long m = (long long)n * hw;  // elements of the channel
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

// h = relu(h * scale[c] + shift[c]), in place, 4 elements a thread: one float4 when a plane's HW
// is a multiple of 4 (224 x 224 here: then the 4 share a channel), else one at a time.
extern "C" __global__ void affine_relu(float* __restrict__ h, const float* __restrict__ affine, long long n,
                                       int c_count, long long hw) {
  const long long i0 = (blockIdx.x * (long long)blockDim.x + threadIdx.x) * 4;
  if (i0 >= n) return;
  if ((hw & 3) == 0) {
    const int c = (int)((i0 / hw) % c_count);
    const float a = affine[c], b = affine[c_count + c];
    float4 v = *reinterpret_cast<float4*>(h + i0);
    v.x = fmaxf(fmaf(v.x, a, b), 0.0f);
    v.y = fmaxf(fmaf(v.y, a, b), 0.0f);
    v.z = fmaxf(fmaf(v.z, a, b), 0.0f);
    v.w = fmaxf(fmaf(v.w, a, b), 0.0f);
    *reinterpret_cast<float4*>(h + i0) = v;
    return;
  }
  for (long long i = i0; i < i0 + 4 && i < n; ++i) {
    const int c = (int)((i / hw) % c_count);
    h[i] = fmaxf(fmaf(h[i], affine[c], affine[c_count + c]), 0.0f);
  }
}

__device__ __forceinline__ float block_out(float o, float s, float a2, float b2, float a3, float b3) {
  return fmaxf(fmaf(o, a2, b2) + fmaf(s, a3, b3), 0.0f);
}

// out = relu(out * scale2[c] + shift2[c] + shortcut * scale3[c] + shift3[c]), in place on out; the
// same 4-a-thread layout as affine_relu.
extern "C" __global__ void add_affine_relu(float* __restrict__ out, const float* __restrict__ affine2,
                                           const float* __restrict__ shortcut, const float* __restrict__ affine3,
                                           long long n, int c_count, long long hw) {
  const long long i0 = (blockIdx.x * (long long)blockDim.x + threadIdx.x) * 4;
  if (i0 >= n) return;
  if ((hw & 3) == 0) {
    const int c = (int)((i0 / hw) % c_count);
    const float a2 = affine2[c], b2 = affine2[c_count + c], a3 = affine3[c], b3 = affine3[c_count + c];
    float4 o = *reinterpret_cast<float4*>(out + i0);
    const float4 s = *reinterpret_cast<const float4*>(shortcut + i0);
    o.x = block_out(o.x, s.x, a2, b2, a3, b3);
    o.y = block_out(o.y, s.y, a2, b2, a3, b3);
    o.z = block_out(o.z, s.z, a2, b2, a3, b3);
    o.w = block_out(o.w, s.w, a2, b2, a3, b3);
    *reinterpret_cast<float4*>(out + i0) = o;
    return;
  }
  for (long long i = i0; i < i0 + 4 && i < n; ++i) {
    const int c = (int)((i / hw) % c_count);
    out[i] = block_out(out[i], shortcut[i], affine2[c], affine2[c_count + c], affine3[c], affine3[c_count + c]);
  }
}
