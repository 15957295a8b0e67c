// Conv2d(6, 8, 3, stride 2, padding 1, dilation 2, groups 2) + bias, then ReLU: the naive reference
// for conv steps, one thread per output element.
/*kagent
{"launch": [{"kernel": "conv_ref", "grid": ["cdiv(numel(y), 128)"], "block": [128],
             "args": ["x", "w", "b", "y"]}]}
*/
extern "C" __global__ void conv_ref(const float* x, const float* w, const float* b, float* y) {
  const int N = 3, C = 6, H = 17, W = 19, K = 8, R = 3, S = 3, G = 2, OH = 8, OW = 9;
  const int stride = 2, pad = 1, dil = 2, cg = C / G, kg = K / G;
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= N * K * OH * OW) return;
  int ow = i % OW, oh = (i / OW) % OH, k = (i / (OW * OH)) % K, n = i / (OW * OH * K);
  int g = k / kg;
  float acc = 0.f;
  for (int c = 0; c < cg; ++c)
    for (int r = 0; r < R; ++r)
      for (int s = 0; s < S; ++s) {
        int ih = oh * stride - pad + r * dil, iw = ow * stride - pad + s * dil;
        if (ih < 0 || ih >= H || iw < 0 || iw >= W) continue;
        acc += x[((n * C + g * cg + c) * H + ih) * W + iw] * w[((k * cg + c) * R + r) * S + s];
      }
  acc += b[k];
  y[i] = acc > 0.f ? acc : 0.f;
}
