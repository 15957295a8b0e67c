// ConvTranspose1d(4, 3, 5, stride 2, padding 1, output_padding 1), no bias: the naive reference for
// transposed conv steps, one thread per output element (a gather over the inputs that reach it).
/*kagent
{"launch": [{"kernel": "convt_ref", "grid": ["cdiv(numel(y), 64)"], "block": [64], "args": ["x", "w", "y"]}]}
*/
extern "C" __global__ void convt_ref(const float* x, const float* w, float* y) {
  const int N = 2, CI = 4, L = 11, CO = 3, KS = 5, OL = 24, stride = 2, pad = 1;
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= N * CO * OL) return;
  int o = i % OL, co = (i / OL) % CO, n = i / (OL * CO);
  float acc = 0.f;
  for (int ci = 0; ci < CI; ++ci)
    for (int k = 0; k < KS; ++k) {
      int t = o + pad - k;  // o = l * stride - pad + k
      if (t < 0 || t % stride != 0) continue;
      int l = t / stride;
      if (l >= L) continue;
      acc += x[(n * CI + ci) * L + l] * w[(ci * CO + co) * KS + k];
    }
  y[i] = acc;
}
