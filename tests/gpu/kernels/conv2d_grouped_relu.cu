// tests/gpu/ops/conv2d_grouped as one cuDNN step: grouped, strided, dilated, with bias and ReLU.
/*kagent
{"launch": [{"conv": {"x": "x", "w": "w", "y": "y", "bias": "b", "stride": 2, "padding": 1, "dilation": 2,
                      "groups": 2, "activation": "relu"}}]}
*/
