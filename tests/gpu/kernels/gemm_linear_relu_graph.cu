// gemm_linear_relu.cu replayed from a CUDA graph: the same results, the same time within noise.
/*kagent
{"graph": true,
 "launch": [{"gemm": {"a": "x", "b": "weight", "trans_b": true, "d": "out", "bias": "bias", "activation": "relu",
                      "m": "x.shape[0]", "n": "weight.shape[0]", "k": "x.shape[1]"}}]}
*/
