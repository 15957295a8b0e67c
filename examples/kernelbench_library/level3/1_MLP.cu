/*kagent
{"scratch": {"h0": {"dtype": "f32", "shape": ["x.shape[0]", "network_0_weight.shape[0]"]},
             "h1": {"dtype": "f32", "shape": ["x.shape[0]", "network_2_weight.shape[0]"]}},
 "launch": [
  {"gemm": {"a": "x", "b": "network_0_weight", "trans_b": true, "d": "h0", "bias": "network_0_bias",
            "activation": "relu", "m": "x.shape[0]", "n": "network_0_weight.shape[0]", "k": "x.shape[1]"}},
  {"gemm": {"a": "h0", "b": "network_2_weight", "trans_b": true, "d": "h1", "bias": "network_2_bias",
            "activation": "relu", "m": "x.shape[0]", "n": "network_2_weight.shape[0]", "k": "h0.shape[1]"}},
  {"gemm": {"a": "h1", "b": "network_4_weight", "trans_b": true, "d": "out", "bias": "network_4_bias",
            "m": "x.shape[0]", "n": "network_4_weight.shape[0]", "k": "h1.shape[1]"}}
]}
*/
// KernelBench level3/1_MLP: Linear-ReLU-Linear-ReLU-Linear (nn.Sequential indices 0, 2, 4) as three
// cuBLASLt steps, each bias (and ReLU) in the GEMM's epilogue; the activations live in scratch.
