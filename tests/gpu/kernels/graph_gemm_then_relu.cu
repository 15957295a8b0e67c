// For tests/gpu/ops/linear_relu: a bare cuBLASLt step with its bias, then a ReLU kernel in place,
// replayed as a CUDA graph: the profile's counters cover the library step (its kernels summed into
// its row, however many the library ran) and the kernel, each in launch order.
/*kagent
{"graph": true,
 "launch": [{"gemm": {"a": "x", "b": "weight", "trans_b": true, "d": "out", "bias": "bias",
                      "m": "x.shape[0]", "n": "weight.shape[0]", "k": "x.shape[1]"}},
            {"kernel": "relu_in_place", "grid": ["cdiv(numel(out), 256)"], "block": [256],
             "args": ["out", "i64:numel(out)"]}]}
*/
extern "C" __global__ void relu_in_place(float* out, long long n) {
  const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    const float v = out[i];
    out[i] = v < 0.f ? 0.f : v;  // NaN stays NaN, as torch.relu keeps it
  }
}
