/*kagent
{"launch": [{"kernel": "conv2d_direct", "grid": ["cdiv(numel(out), 256)"], "block": [256],
             "args": ["x", "conv1_weight", "conv1_bias", "out", "i64:numel(out)"]}]}
*/
// KernelBench level1/50 (Conv2d 3 -> 96, 11x11, stride 4, padding 2, on 256 x 3 x 224 x 224) as an
// exact fp32 direct convolution: one thread per output element, 363 fp32 FMAs in (c, kh, kw)
// order, no tensor cores. Against PyTorch's default reference (cuDNN on TF32 tensor cores) 18% of
// its elements were outside kagent's fp32 tolerance; under precision fp32 the reference is pinned
// to IEEE fp32 and it must pass (tests/gpu/test_pytorch_eval.cpp).
extern "C" __global__ void conv2d_direct(const float* __restrict__ x, const float* __restrict__ w,
                                         const float* __restrict__ bias, float* __restrict__ out, long long n) {
  constexpr int C = 3, H = 224, W = 224, OC = 96, K = 11, S = 4, P = 2, OH = 55, OW = 55;
  const long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i >= n) return;
  const int ow = static_cast<int>(i % OW);
  long long t = i / OW;
  const int oh = static_cast<int>(t % OH);
  t /= OH;
  const int oc = static_cast<int>(t % OC);
  const long long b = t / OC;
  float acc = 0.f;
  for (int c = 0; c < C; ++c)
    for (int kh = 0; kh < K; ++kh) {
      const int ih = oh * S - P + kh;
      if (ih < 0 || ih >= H) continue;
      for (int kw = 0; kw < K; ++kw) {
        const int iw = ow * S - P + kw;
        if (iw < 0 || iw >= W) continue;
        acc = fmaf(x[((b * C + c) * H + ih) * W + iw], w[((oc * C + c) * K + kh) * K + kw], acc);
      }
    }
  out[i] = acc + bias[oc];
}
