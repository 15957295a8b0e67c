/*kagent
{"launch": [{"gemm": {"a": "x", "b": "gemm_weight", "trans_b": true, "d": "out", "bias": "bias",
                      "activation": "relu", "m": "x.shape[0]", "n": "gemm_weight.shape[0]", "k": "x.shape[1]"}}]}
*/
// KernelBench level2/76_Gemm_Add_ReLU: out = relu(x @ gemm_weight^T + bias) as one cuBLASLt step,
// the bias and the ReLU in its epilogue (IEEE fp32: compute "auto").
