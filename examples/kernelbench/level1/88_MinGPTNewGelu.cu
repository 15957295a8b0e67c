/*kagent
{
  "launch": [
    {"kernel": "new_gelu_vec4", "grid": ["max(min(cdiv(numel(x),1024), 132*8), 1)"], "block": [256],
     "args": ["x", "out", "i64:numel(x)"]}
  ]
}
*/
// KernelBench level1/88_MinGPTNewGelu: out = 0.5 * x * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 *
// x^3))), minGPT's tanh approximation of GELU, x [8192, 8192] f32 (6.7e7 elements, 268 MB).
// Memory-bound: x is streamed once and out written once with 128-bit (float4) loads/stores in a
// grid-stride loop over a grid that fills the GPU exactly once (132 SMs x 8 blocks of 256
// threads; __launch_bounds__(256, 8) keeps registers low enough for that). Each thread issues 2
// independent float4 loads before its stores, and the accesses carry cache-streaming hints.
// Accurate tanhf (no fast math, no tanh.approx). 64-bit indices; scalar tail for n % 4 and a
// scalar fallback for unaligned pointers.

// The forward's ops in its order, each in float as PyTorch's separate kernels compute them:
// pow(x, 3.0) is x * x * x in torch's CUDA pow for an exponent of 3, the Python constants are
// taken as floats (sqrt(2 / pi) = 0.7978845608028654), and 0.5 * x multiplies first. The
// compiler may fuse a multiply and an add into one FMA where torch rounds twice: an ulp or so
// apart, far inside the tolerance. NaN propagates through every step.
__device__ __forceinline__ float op(float v) {
  const float inner = v + 0.044715f * (v * v * v);
  const float t = tanhf(0.7978845608028654f * inner);
  return (0.5f * v) * (1.0f + t);
}

__device__ __forceinline__ float4 op4(float4 v) {
  return make_float4(op(v.x), op(v.y), op(v.z), op(v.w));
}

extern "C" __global__ void __launch_bounds__(256, 8)
new_gelu_vec4(const float* __restrict__ x, float* __restrict__ out, long long n) {
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
