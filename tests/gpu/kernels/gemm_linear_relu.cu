// tests/gpu/ops/linear_relu as one cuBLASLt step: the weight read transposed, bias and ReLU as
// cuBLASLt's epilogue. No kernels of its own.
/*kagent
{"launch": [{"gemm": {"a": "x", "b": "weight", "trans_b": true, "d": "out", "bias": "bias", "activation": "relu",
                      "m": "x.shape[0]", "n": "weight.shape[0]", "k": "x.shape[1]"}}]}
*/
