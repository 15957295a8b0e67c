/*kagent
{"launch": [{"kernel": "softmax_rows_ref", "grid": ["cdiv(x.shape[0], 128)"], "block": [128],
             "args": ["x", "out", "i32:x.shape[0]", "i32:x.shape[1]"]}]}
*/
// The straightforward reference: one thread per row, three passes over the row (max, sum of
// exp, write). Correct and simple; slow because a warp's 32 threads read 32 different rows.
extern "C" __global__ void softmax_rows_ref(const float* x, float* out, int rows, int cols) {
  int r = blockIdx.x * blockDim.x + threadIdx.x;
  if (r >= rows) return;
  const float* xr = x + (size_t)r * cols;
  float m = -3.402823466e38f;
  for (int c = 0; c < cols; ++c) m = fmaxf(m, xr[c]);
  float s = 0.0f;
  for (int c = 0; c < cols; ++c) s += expf(xr[c] - m);
  for (int c = 0; c < cols; ++c) out[(size_t)r * cols + c] = expf(xr[c] - m) / s;
}
