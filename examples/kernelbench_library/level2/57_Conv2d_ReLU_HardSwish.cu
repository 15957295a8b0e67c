/*kagent
{"launch": [
  {"conv": {"x": "x", "w": "conv_weight", "y": "out"}},
  {"kernel": "bias_relu_hardswish", "grid": ["out.shape[0] * out.shape[1]", "cdiv(out.shape[2] * out.shape[3], 1024)"],
   "block": [256], "args": ["out", "conv_bias", "i32:out.shape[1]", "i32:out.shape[2] * out.shape[3]"]}
]}
*/
// KernelBench level2/57_Conv2d_ReLU_HardSwish: v = relu(conv(x) + conv_bias[c]),
// out = v * clamp((v + 3) / 6, 0, 1). cuDNN does the bare convolution (the algorithm kagent
// measured fastest); one elementwise pass then adds the convolution's bias, applies the ReLU and
// the hard-swish factor, in place: two passes over the output where eager PyTorch makes seven
// (the bias, relu, +3, /6, clamp, *) and torch.compile's fused tail still follows a convolution
// that adds its bias in a pass of its own.
//
// grid.x is one (image, channel) plane, so the channel's bias is read once per block and no
// element needs a division to find its channel; grid.y cuts the plane into chunks of 1024
// elements, 4 per thread at a stride of blockDim.x (coalesced). Any plane size: the tail of the
// last chunk is masked.
extern "C" __global__ void bias_relu_hardswish(float* __restrict__ out, const float* __restrict__ conv_bias,
                                               int channels, int plane) {
  constexpr int kPerThread = 4;
  const long long p = blockIdx.x;  // n * channels + c
  const float b = conv_bias[p % channels];
  float* o = out + p * plane;
  const int base = blockIdx.y * (blockDim.x * kPerThread) + threadIdx.x;
  float v[kPerThread];
#pragma unroll
  for (int k = 0; k < kPerThread; ++k) {  // all loads first: four in flight per thread
    const int i = base + k * blockDim.x;
    v[k] = i < plane ? o[i] : 0.0f;
  }
#pragma unroll
  for (int k = 0; k < kPerThread; ++k) {
    const int i = base + k * blockDim.x;
    if (i < plane) {
      const float r = fmaxf(v[k] + b, 0.0f);
      o[i] = r * fminf(fmaxf((r + 3.0f) / 6.0f, 0.0f), 1.0f);
    }
  }
}
