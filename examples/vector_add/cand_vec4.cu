/*kagent
{
  "launch": [
    {"kernel": "vector_add_vec4", "grid": ["max(cdiv(cdiv(numel(out),4),256), 1)"], "block": [256],
     "args": ["a", "b", "out", "i64:numel(out)"]}
  ]
}
*/
// Candidate: 128-bit (float4) loads and stores. Each thread adds four elements at a time
// over the first 4*(n/4) elements (grid-stride, so any grid size is correct); the last n % 4
// elements are done by a scalar tail. If any pointer is not 16-byte aligned, float4 accesses
// would be illegal, so the kernel then falls back to a plain scalar grid-stride loop.

extern "C" __global__ void vector_add_vec4(const float* __restrict__ a,
                                           const float* __restrict__ b,
                                           float* __restrict__ out, long long n) {
  const long long tid = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  const long long stride = (long long)gridDim.x * blockDim.x;

  const bool aligned =
      (((unsigned long long)a | (unsigned long long)b | (unsigned long long)out) & 15) == 0;
  if (!aligned) {
    for (long long i = tid; i < n; i += stride) out[i] = a[i] + b[i];
    return;
  }

  // Vector body: elements [0, 4*n4).
  const long long n4 = n / 4;
  const float4* a4 = reinterpret_cast<const float4*>(a);
  const float4* b4 = reinterpret_cast<const float4*>(b);
  float4* out4 = reinterpret_cast<float4*>(out);
  for (long long i = tid; i < n4; i += stride) {
    const float4 x = a4[i];
    const float4 y = b4[i];
    out4[i] = make_float4(x.x + y.x, x.y + y.y, x.z + y.z, x.w + y.w);
  }

  // Scalar tail: elements [4*n4, n), at most 3 of them, one per thread of the first threads.
  const long long i = 4 * n4 + tid;
  if (i < n) out[i] = a[i] + b[i];
}
