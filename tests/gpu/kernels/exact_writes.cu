/*kagent
{
  "scratch": {"tmp": {"dtype": "f32", "shape": [1001]}, "flags": {"dtype": "u8", "shape": [13]}},
  "launch": [
    {"kernel": "fill_scratch", "grid": [4], "block": [256], "args": ["tmp", "flags", "i32:1001", "i32:13"]},
    {"kernel": "vector_add_vec4", "grid": ["max(cdiv(cdiv(numel(out),4),256), 1)"], "block": [256],
     "args": ["a", "b", "out", "tmp", "flags", "i64:numel(out)"]}
  ]
}
*/
// Fixture (examples/vector_add/op.json): an honest kernel that writes right up to the end of every
// buffer it gets and never past it; the guard bands must never flag it. The scratch buffers have
// sizes that are not multiples of 256 (4004 and 13 bytes: their back bands start inside what would
// be alignment padding) and are written in full, the last byte included; out is written with
// float4 stores up to the last whole vector and a scalar tail (the op's n is a multiple of 4, so
// the last float4 ends exactly at the buffer's end). Expected: correct, tier >= 1.

extern "C" __global__ void fill_scratch(float* tmp, unsigned char* flags, int n, int nflags) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) tmp[i] = 0.0f;
  if (i < nflags) flags[i] = 1;
}

extern "C" __global__ void vector_add_vec4(const float* __restrict__ a, const float* __restrict__ b,
                                           float* __restrict__ out, const float* __restrict__ tmp,
                                           const unsigned char* __restrict__ flags, long long n) {
  const long long tid = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  const long long stride = (long long)gridDim.x * blockDim.x;
  const float zero = tmp[1000] * flags[12];  // the last element of each scratch buffer: 0
  const long long n4 = n / 4;
  for (long long i = tid; i < n4; i += stride) {
    const float4 x = reinterpret_cast<const float4*>(a)[i];
    const float4 y = reinterpret_cast<const float4*>(b)[i];
    reinterpret_cast<float4*>(out)[i] = make_float4(x.x + y.x + zero, x.y + y.y, x.z + y.z, x.w + y.w);
  }
  const long long i = 4 * n4 + tid;
  if (i < n) out[i] = a[i] + b[i];
}
