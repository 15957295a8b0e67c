/*kagent
{
  "launch": [
    {"kernel": "elu_vec4", "grid": ["max(min(cdiv(numel(x),1024), 132*8), 1)"], "block": [256],
     "args": ["x", "out", "i64:numel(x)"]}
  ]
}
*/
// KernelBench level1/31_ELU: out = elu(x, alpha) = x > 0 ? x : alpha * (exp(x) - 1), with alpha
// = 1.0 (get_init_inputs passes [1.0] to __init__; hard-coded here, since only forward's
// tensors and scalars reach a kernel), x [4096, 393216] f32 (1.61e9 elements, 6.4 GB).
// Memory-bound: x is streamed once and out written once with 128-bit (float4) loads/stores in a
// grid-stride loop over a grid that fills the GPU exactly once (132 SMs x 8 blocks of 256
// threads; __launch_bounds__(256, 8) keeps registers low enough for that). Each thread issues 2
// independent float4 loads before its stores, and the accesses carry cache-streaming hints.
// Accurate expm1f (no fast math), as PyTorch's ELU kernel uses. 64-bit indices; scalar tail for
// n % 4 and a scalar fallback for unaligned pointers.

// PyTorch's ELU kernel in float: x > 0 ? x * scale : expm1(x * input_scale) * (alpha * scale),
// scale = input_scale = 1, so: x > 0 ? x : expm1(x) * alpha. NaN > 0 is false and
// expm1f(NaN) = NaN, so NaN passes through.
#define ELU_ALPHA 1.0f
__device__ __forceinline__ float op(float v) { return v > 0.0f ? v : expm1f(v) * ELU_ALPHA; }

__device__ __forceinline__ float4 op4(float4 v) {
  return make_float4(op(v.x), op(v.y), op(v.z), op(v.w));
}

extern "C" __global__ void __launch_bounds__(256, 8)
elu_vec4(const float* __restrict__ x, float* __restrict__ out, long long n) {
  const long long tid = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  const long long stride = (long long)gridDim.x * blockDim.x;

  if ((((unsigned long long)x | (unsigned long long)out) & 15) != 0) {
    for (long long i = tid; i < n; i += stride) out[i] = op(x[i]);  // unaligned fallback
    return;
  }

  const long long n4 = n / 4;
  const float4* x4 = reinterpret_cast<const float4*>(x);
  float4* out4 = reinterpret_cast<float4*>(out);
  long long i = tid;
  // Main body: 2 float4 per thread per iteration, both loads issued before the stores
  // (2 x 16 B x 2048 resident threads per SM is ample memory-level parallelism, and more
  // unrolling would spill at 32 registers).
  for (; i + stride < n4; i += 2 * stride) {
    const float4 a = __ldcs(x4 + i);
    const float4 b = __ldcs(x4 + i + stride);
    __stcs(out4 + i, op4(a));
    __stcs(out4 + i + stride, op4(b));
  }
  for (; i < n4; i += stride) __stcs(out4 + i, op4(__ldcs(x4 + i)));

  // Scalar tail: elements [4*n4, n), at most 3.
  const long long t = 4 * n4 + tid;
  if (t < n) out[t] = op(x[t]);
}
