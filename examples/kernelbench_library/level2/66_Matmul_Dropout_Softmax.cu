/*kagent
{"launch": [
  {"gemm": {"a": "x", "b": "matmul_weight", "trans_b": true, "d": "out", "bias": "matmul_bias",
            "m": "x.shape[0]", "n": "matmul_weight.shape[0]", "k": "x.shape[1]"}},
  {"kernel": "dropout_softmax", "grid": ["out.shape[0]"], "block": [1024],
   "args": ["out", "dropout_mult", "i32:out.shape[1]"]}
]}
*/
// KernelBench level2/66_Matmul_Dropout_Softmax: y = x @ matmul_weight^T + matmul_bias (one
// cuBLASLt step, the bias in its epilogue, IEEE fp32), then softmax over each row of y * dropout_mult.
//
// The dropout is nn.Dropout(p=0.2), active because KernelBench runs its models in training mode:
// the reference draws a fresh mask inside forward every call. kagent records what it drew and
// hands it over as the input `dropout_mult`, 0 or 1/(1-p) = 1.25 per element ("drawn by
// nn.Dropout(p=0.2) in forward, call 1" in the tensor table); the reference's dropout output is
// y * dropout_mult exactly, so the product here is the same rounding as PyTorch's.
//
// One block per row, in place on `out`: the row's maximum, then the sum of exp(v - max), then the
// write, each pass reading the row (64 KB, from L2 after the first) with coalesced loads.

__device__ __forceinline__ float block_reduce(float v, bool is_max, float* shared) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) {
    const float w = __shfl_xor_sync(0xffffffffu, v, o);
    v = is_max ? fmaxf(v, w) : v + w;
  }
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, warps = blockDim.x >> 5;
  __syncthreads();  // `shared` may still be read by the previous reduction
  if (lane == 0) shared[warp] = v;
  __syncthreads();
  v = lane < warps ? shared[lane] : (is_max ? __int_as_float(0xff800000) : 0.0f);
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) {
    const float w = __shfl_xor_sync(0xffffffffu, v, o);
    v = is_max ? fmaxf(v, w) : v + w;
  }
  return v;  // every thread holds the block's result
}

extern "C" __global__ void dropout_softmax(float* __restrict__ out, const float* __restrict__ mult, int cols) {
  __shared__ float shared[32];
  float* row = out + static_cast<long long>(blockIdx.x) * cols;
  const float* m = mult + static_cast<long long>(blockIdx.x) * cols;

  float mx = __int_as_float(0xff800000);  // -inf
  for (int j = threadIdx.x; j < cols; j += blockDim.x) mx = fmaxf(mx, row[j] * m[j]);
  mx = block_reduce(mx, true, shared);

  float sum = 0.0f;
  for (int j = threadIdx.x; j < cols; j += blockDim.x) sum += expf(row[j] * m[j] - mx);
  sum = block_reduce(sum, false, shared);

  const float inv = 1.0f / sum;
  for (int j = threadIdx.x; j < cols; j += blockDim.x) row[j] = expf(row[j] * m[j] - mx) * inv;
}
