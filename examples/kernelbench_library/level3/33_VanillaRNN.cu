/*kagent
{"scratch": {"hidden": {"dtype": "f32", "shape": ["x.shape[0]", "i2h_weight.shape[0]"]}},
 "launch": [
  {"gemm": {"a": "x", "b": "i2h_weight", "trans_b": true, "ldb": "i2h_weight.shape[1]", "d": "hidden",
            "bias": "i2h_bias", "m": "x.shape[0]", "n": "i2h_weight.shape[0]", "k": "x.shape[1]"}},
  {"gemm": {"a": "initial_hidden", "b": "i2h_weight", "trans_b": true, "ldb": "i2h_weight.shape[1]",
            "offset_b": "x.shape[1]", "c": "hidden", "beta": 1, "d": "hidden",
            "m": "x.shape[0]", "n": "i2h_weight.shape[0]", "k": "initial_hidden.shape[1]"}},
  {"kernel": "tanh_in_place", "grid": ["cdiv(numel(hidden), 1024)"], "block": [256],
   "args": ["hidden", "i64:numel(hidden)"]},
  {"gemm": {"a": "hidden", "b": "h2o_weight", "trans_b": true, "d": "out", "bias": "h2o_bias",
            "m": "x.shape[0]", "n": "h2o_weight.shape[0]", "k": "hidden.shape[1]"}}
]}
*/
// KernelBench level3/33_VanillaRNN: out = h2o(tanh(i2h(cat([x, initial_hidden], 1)))).
// The concatenation is never built: i2h's weight W [H, I + H] is read as two column blocks, the
// first I columns against x (ldb = I + H), the last H from offset_b = I against the hidden state,
// the second product adding into the first (c = d, beta 1); the bias rides the first product's
// epilogue. tanh has no cuBLASLt epilogue: one elementwise pass in place, then h2o as a third
// product with its bias in the epilogue. All IEEE fp32 (compute "auto").

// One thread per four elements (float4: the scratch buffer is 256-byte aligned and its size a
// multiple of 4 for these shapes; a scalar tail covers any other size).
extern "C" __global__ void tanh_in_place(float* __restrict__ h, long long n) {
  const long long i = 4 * ((long long)blockIdx.x * blockDim.x + threadIdx.x);
  if (i + 3 < n) {
    float4 v = *reinterpret_cast<float4*>(h + i);
    v.x = tanhf(v.x);
    v.y = tanhf(v.y);
    v.z = tanhf(v.z);
    v.w = tanhf(v.w);
    *reinterpret_cast<float4*>(h + i) = v;
  } else {
    for (long long j = i; j < n; ++j) h[j] = tanhf(h[j]);
  }
}
