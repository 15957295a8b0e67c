// relu(x @ weight^T + bias), one thread per output element: the naive reference for gemm steps.
/*kagent
{"launch": [{"kernel": "linear_relu_ref", "grid": ["cdiv(numel(out), 128)"], "block": [128],
             "args": ["x", "weight", "bias", "out", "i32:x.shape[0]", "i32:weight.shape[0]", "i32:x.shape[1]"]}]}
*/
extern "C" __global__ void linear_relu_ref(const float* x, const float* w, const float* b, float* out, int m, int n,
                                           int k) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= m * n) return;
  int r = i / n, c = i % n;
  float acc = 0.f;
  for (int j = 0; j < k; ++j) acc += x[r * k + j] * w[c * k + j];
  acc += b[c];
  out[i] = acc > 0.f ? acc : 0.f;
}
