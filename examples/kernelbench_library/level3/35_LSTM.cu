/*kagent
{"scratch": {"gates": {"dtype": "f32", "shape": ["x.shape[0] * x.shape[1]", "lstm_weight_ih_l0.shape[0]"]},
             "hseq": {"dtype": "f32", "shape": ["x.shape[0] * x.shape[1]", "lstm_weight_hh_l0.shape[1]"]}},
 "launch": [
  {"gemm": {"a": "x", "b": "lstm_weight_ih_l0", "trans_b": true, "d": "gates", "bias": "lstm_bias_ih_l0",
            "m": "x.shape[0] * x.shape[1]", "n": "lstm_weight_ih_l0.shape[0]", "k": "x.shape[2]"}},
  {"kernel": "lstm_layer", "grid": ["x.shape[0] * 8"], "block": [512], "smem": 131072,
   "args": ["gates", "lstm_weight_hh_l0", "lstm_bias_hh_l0", "h0", "c0", "hseq", "i32:0", "i32:x.shape[0]",
            "i32:x.shape[1]", "i32:lstm_weight_hh_l0.shape[1]"]},
  {"gemm": {"a": "hseq", "b": "lstm_weight_ih_l1", "trans_b": true, "d": "gates", "bias": "lstm_bias_ih_l1",
            "m": "x.shape[0] * x.shape[1]", "n": "lstm_weight_ih_l1.shape[0]", "k": "hseq.shape[1]"}},
  {"kernel": "lstm_layer", "grid": ["x.shape[0] * 8"], "block": [512], "smem": 131072,
   "args": ["gates", "lstm_weight_hh_l1", "lstm_bias_hh_l1", "h0", "c0", "hseq", "i32:1", "i32:x.shape[0]",
            "i32:x.shape[1]", "i32:lstm_weight_hh_l1.shape[1]"]},
  {"gemm": {"a": "hseq", "b": "lstm_weight_ih_l2", "trans_b": true, "d": "gates", "bias": "lstm_bias_ih_l2",
            "m": "x.shape[0] * x.shape[1]", "n": "lstm_weight_ih_l2.shape[0]", "k": "hseq.shape[1]"}},
  {"kernel": "lstm_layer", "grid": ["x.shape[0] * 8"], "block": [512], "smem": 131072,
   "args": ["gates", "lstm_weight_hh_l2", "lstm_bias_hh_l2", "h0", "c0", "hseq", "i32:2", "i32:x.shape[0]",
            "i32:x.shape[1]", "i32:lstm_weight_hh_l2.shape[1]"]},
  {"gemm": {"a": "hseq", "b": "lstm_weight_ih_l3", "trans_b": true, "d": "gates", "bias": "lstm_bias_ih_l3",
            "m": "x.shape[0] * x.shape[1]", "n": "lstm_weight_ih_l3.shape[0]", "k": "hseq.shape[1]"}},
  {"kernel": "lstm_layer", "grid": ["x.shape[0] * 8"], "block": [512], "smem": 131072,
   "args": ["gates", "lstm_weight_hh_l3", "lstm_bias_hh_l3", "h0", "c0", "hseq", "i32:3", "i32:x.shape[0]",
            "i32:x.shape[1]", "i32:lstm_weight_hh_l3.shape[1]"]},
  {"gemm": {"a": "hseq", "b": "lstm_weight_ih_l4", "trans_b": true, "d": "gates", "bias": "lstm_bias_ih_l4",
            "m": "x.shape[0] * x.shape[1]", "n": "lstm_weight_ih_l4.shape[0]", "k": "hseq.shape[1]"}},
  {"kernel": "lstm_layer", "grid": ["x.shape[0] * 8"], "block": [512], "smem": 131072,
   "args": ["gates", "lstm_weight_hh_l4", "lstm_bias_hh_l4", "h0", "c0", "hseq", "i32:4", "i32:x.shape[0]",
            "i32:x.shape[1]", "i32:lstm_weight_hh_l4.shape[1]"]},
  {"gemm": {"a": "hseq", "b": "lstm_weight_ih_l5", "trans_b": true, "d": "gates", "bias": "lstm_bias_ih_l5",
            "m": "x.shape[0] * x.shape[1]", "n": "lstm_weight_ih_l5.shape[0]", "k": "hseq.shape[1]"}},
  {"kernel": "lstm_layer", "grid": ["x.shape[0] * 8"], "block": [512], "smem": 131072,
   "args": ["gates", "lstm_weight_hh_l5", "lstm_bias_hh_l5", "h0", "c0", "hseq", "i32:5", "i32:x.shape[0]",
            "i32:x.shape[1]", "i32:lstm_weight_hh_l5.shape[1]"]},
  {"kernel": "lstm_fc", "grid": ["x.shape[0]"], "block": [32],
   "args": ["hseq", "fc_weight", "fc_bias", "out", "i32:x.shape[1]", "i32:fc_weight.shape[1]", "i32:fc_weight.shape[0]"]}
]}
*/
// KernelBench level3/35_LSTM: a 6-layer nn.LSTM (input 128, hidden 256, batch_first, no dropout)
// over x [10, 512, 128], then fc on the last step's hidden state of the last layer.
//
// forward draws the initial states itself (h0 = torch.randn(...), c0 = torch.randn(...)), which
// no candidate could know; kagent records them and hands them over as the inputs `h0` and `c0`
// [num_layers, batch, hidden] ("drawn by torch.randn in forward, call 1: ... forward uses them as
// h0" in the tensor table), fresh each trial.
//
// Per layer: one cuBLASLt step computes every time step's input projection at once,
// gates = x_t W_ih^T + b_ih for all (b, t) (rows b * T + t), IEEE fp32; then one kernel runs the
// recurrence. It is a cluster of 8 blocks per batch element (grid: batch * 8 blocks): block
// `rank` owns hidden units [32 rank, 32 rank + 32), that is 128 gate rows (i, f, g, o of each,
// PyTorch's order), and keeps their slice of W_hh (128 x 256, 128 KiB) in shared memory for the
// whole sequence. Each step: 512 threads, four per gate row, each a quarter of the dot product
// with h_{t-1}; the row adds x_t W_ih^T + b_ih + b_hh; 32 threads update c and h of the block's
// units and write h to shared memory (two buffers, by step parity) and to hseq; cluster.sync();
// every block gathers the whole h_t from its 7 partners' shared memory (distributed shared
// memory). The next layer reads hseq as its input. The final lstm_fc reads h at t = T - 1.
#include <cooperative_groups.h>

namespace cg = cooperative_groups;

constexpr int kH = 256;              // hidden size: the kernel's layout is made for it (checked)
constexpr int kCluster = 8;          // blocks per batch element
constexpr int kUnits = kH / kCluster;  // hidden units per block
constexpr int kRows = 4 * kUnits;    // gate rows per block
constexpr int kParts = 4;            // threads per gate row (512 threads)

__device__ __forceinline__ float sigmoid(float v) { return 1.0f / (1.0f + expf(-v)); }

extern "C" __global__ void __cluster_dims__(8, 1, 1)
    lstm_layer(const float* __restrict__ gates, const float* __restrict__ w_hh, const float* __restrict__ b_hh,
               const float* __restrict__ h0, const float* __restrict__ c0, float* __restrict__ hseq, int layer,
               int batch, int steps, int hidden) {
  extern __shared__ float w[];  // [kH][kRows]: w[k * kRows + r] = W_hh[row(r)][k]
  __shared__ float h[kH];       // h_{t-1}, all units
  __shared__ float part[kParts][kRows];
  __shared__ float g[kRows];
  __shared__ float mine[2][kUnits];  // this block's units of h_t, read by the partners
  if (hidden != kH || blockDim.x != kParts * kRows || gridDim.x != static_cast<unsigned>(batch * kCluster)) __trap();
  cg::cluster_group cluster = cg::this_cluster();
  const int rank = static_cast<int>(cluster.block_rank());
  const int b = blockIdx.x / kCluster;
  const int tid = threadIdx.x;
  // Local gate row r: gate r / kUnits (i, f, g, o) of unit rank * kUnits + r % kUnits.
  auto row = [&](int r) { return (r / kUnits) * kH + rank * kUnits + r % kUnits; };

  for (int i = tid; i < kRows * kH; i += blockDim.x) {
    const int r = i / kH, k = i % kH;
    w[k * kRows + r] = w_hh[static_cast<long long>(row(r)) * kH + k];
  }
  const long long state = (static_cast<long long>(layer) * batch + b) * kH;
  for (int k = tid; k < kH; k += blockDim.x) h[k] = h0[state + k];
  float c = tid < kUnits ? c0[state + rank * kUnits + tid] : 0.0f;
  const float bias = tid < kRows ? b_hh[row(tid)] : 0.0f;
  __syncthreads();

  // Thread tid: gate row r = (tid / 32) % 4 * 32 + lane (a warp reads 32 adjacent rows of w: no
  // bank conflicts), part q = tid / 128 of the k range.
  const int r = ((tid >> 5) & 3) * 32 + (tid & 31);
  const int q = tid >> 7;
  constexpr int kSpan = kH / kParts;
  for (int t = 0; t < steps; ++t) {
    const long long at = static_cast<long long>(b) * steps + t;
    // This step's input projection, loaded before the dot product so its latency overlaps it.
    const float gx = tid < kRows ? gates[at * (4 * kH) + row(tid)] : 0.0f;
    float acc = 0.0f;
#pragma unroll 8
    for (int k = q * kSpan; k < (q + 1) * kSpan; ++k) acc = fmaf(w[k * kRows + r], h[k], acc);
    part[q][r] = acc;
    __syncthreads();
    if (tid < kRows) g[tid] = (gx + bias) + ((part[0][tid] + part[1][tid]) + (part[2][tid] + part[3][tid]));
    __syncthreads();
    if (tid < kUnits) {
      const float ig = sigmoid(g[tid]), fg = sigmoid(g[kUnits + tid]);
      const float gg = tanhf(g[2 * kUnits + tid]), og = sigmoid(g[3 * kUnits + tid]);
      c = fg * c + ig * gg;
      const float hn = og * tanhf(c);
      mine[t & 1][tid] = hn;
      hseq[at * kH + rank * kUnits + tid] = hn;
    }
    cluster.sync();  // every block's units of h_t are written
    for (int k = tid; k < kH; k += blockDim.x) {
      const float* theirs = cluster.map_shared_rank(&mine[t & 1][0], k / kUnits);
      h[k] = theirs[k % kUnits];
    }
    __syncthreads();  // h_t complete before the next step reads it
    // A partner may still read mine[t & 1] until it passes the next step's cluster.sync, and this
    // block writes mine[(t + 1) & 1] next: the two buffers keep them apart.
  }
  cluster.sync();  // no block leaves while a partner may still read its shared memory
}

// out[b][o] = fc_bias[o] + fc_weight[o] . h_{T-1}[b] of the last layer; a thread per output.
extern "C" __global__ void lstm_fc(const float* __restrict__ hseq, const float* __restrict__ fc_weight,
                                   const float* __restrict__ fc_bias, float* __restrict__ out, int steps, int hidden,
                                   int outputs) {
  const int b = blockIdx.x;
  const float* hl = hseq + (static_cast<long long>(b) * steps + steps - 1) * hidden;
  for (int o = threadIdx.x; o < outputs; o += blockDim.x) {
    float acc = 0.0f;
    for (int u = 0; u < hidden; ++u) acc = fmaf(fc_weight[static_cast<long long>(o) * hidden + u], hl[u], acc);
    out[static_cast<long long>(b) * outputs + o] = acc + fc_bias[o];
  }
}
