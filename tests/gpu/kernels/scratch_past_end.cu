/*kagent
{
  "scratch": {"tmp": {"dtype": "f32", "shape": [1000]}},
  "launch": [
    {"kernel": "vector_add", "grid": ["cdiv(numel(out),256)"], "block": [256],
     "args": ["a", "b", "out", "i64:numel(out)"]},
    {"kernel": "fill_tmp", "grid": [4], "block": [256], "args": ["tmp", "i32:1000"]}
  ]
}
*/
// Fixture (examples/vector_add/op.json): a correct add, and a second launch that fills a scratch
// buffer of 1000 floats with `i <= n`: tmp[1000] lies 4 bytes past the scratch's end. 4000 bytes is
// not a multiple of 256, so the store lands in what would be the allocation's alignment padding,
// where the back band starts. Expected: failure stage "bounds", a message naming scratch 'tmp' with
// "4 bytes after its end damaged (first at offset +0 past the end)", tier -1.

extern "C" __global__ void vector_add(const float* a, const float* b, float* out, long long n) {
  long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = a[i] + b[i];
}

extern "C" __global__ void fill_tmp(float* tmp, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i <= n) tmp[i] = 0.0f;
}
