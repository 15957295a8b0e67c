/*kagent
{"launch": [{"conv": {"x": "x", "w": "conv1_weight", "y": "out", "bias": "conv1_bias", "stride": 4, "padding": 2}}]}
*/
// KernelBench level1/50 (Conv2d 3 -> 96, 11x11, stride 4, padding 2, with bias, on 256 x 3 x 224 x
// 224) as one cuDNN step and nothing else (IEEE fp32: compute "auto", cuDNN's FMA algorithms). An
// overhead fixture (issue #19): eager PyTorch runs the same convolution through cuDNN and adds the
// bias after it, as the step does (cudnnAddTensor), so the speedup kagent prints is the cost of a
// library step against calling the library from PyTorch, expected within 3% of 1 when both pick
// the same algorithm (kagent measures every algorithm; PyTorch without cudnn.benchmark takes
// cuDNN's heuristic, so a ratio above 1 may be the better algorithm, not less overhead).
