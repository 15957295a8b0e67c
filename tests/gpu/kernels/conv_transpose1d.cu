// tests/gpu/ops/conv_transpose1d as one cuDNN step (backward data of a 1-D convolution).
/*kagent
{"launch": [{"conv": {"x": "x", "w": "w", "y": "y", "transposed": true, "stride": 2, "padding": 1,
                      "output_padding": 1}}]}
*/
