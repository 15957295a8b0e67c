/*kagent
{
  "launch": [
    {"kernel": "scale_vec4", "grid": ["max(min(cdiv(numel(A),1024), 132*8), 1)"], "block": [256],
     "args": ["A", "out", "f32:s", "i64:numel(A)"]}
  ]
}
*/
// KernelBench level1/5_Matrix_scalar_multiplication: out = A * s, A [65536, 16384] f32
// (1.07e9 elements, 4.3 GB), s a Python float (3.14) passed as an f32 scalar (PyTorch also
// multiplies a float32 tensor by the scalar in float32). Memory-bound: A is streamed once and
// out written once with 128-bit (float4) loads/stores in a grid-stride loop over a grid that
// fills the GPU exactly once (132 SMs x 8 blocks of 256 threads; __launch_bounds__(256, 8)
// keeps registers low enough for that). Each thread issues 2 independent float4 loads before
// its stores; accesses carry cache-streaming hints. 64-bit indices; scalar tail for n % 4 and
// a scalar fallback for unaligned pointers.

__device__ __forceinline__ float4 op4(float4 v, float s) {
  return make_float4(v.x * s, v.y * s, v.z * s, v.w * s);
}

extern "C" __global__ void __launch_bounds__(256, 8)
scale_vec4(const float* __restrict__ A, float* __restrict__ out, float s, long long n) {
  const long long tid = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  const long long stride = (long long)gridDim.x * blockDim.x;

  if ((((unsigned long long)A | (unsigned long long)out) & 15) != 0) {
    for (long long i = tid; i < n; i += stride) out[i] = A[i] * s;  // unaligned fallback
    return;
  }

  const long long n4 = n / 4;
  const float4* a4 = reinterpret_cast<const float4*>(A);
  float4* out4 = reinterpret_cast<float4*>(out);
  long long i = tid;
  // Main body: 2 float4 per thread per iteration, both loads issued before the stores
  // (2 x 16 B x 2048 resident threads per SM is ample memory-level parallelism, and more
  // unrolling would spill at 32 registers).
  for (; i + stride < n4; i += 2 * stride) {
    const float4 a = __ldcs(a4 + i);
    const float4 b = __ldcs(a4 + i + stride);
    __stcs(out4 + i, op4(a, s));
    __stcs(out4 + i + stride, op4(b, s));
  }
  for (; i < n4; i += stride) __stcs(out4 + i, op4(__ldcs(a4 + i), s));

  // Scalar tail: elements [4*n4, n), at most 3.
  const long long t = 4 * n4 + tid;
  if (t < n) out[t] = A[t] * s;
}
