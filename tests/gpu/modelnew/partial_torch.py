# A correct ReLU whose own kernel does the pass over the tensor, scaled by a one-element tensor that
# PyTorch computes (full(0.25) * 2 = 0.5; the kernel multiplies by 2 * 0.5, exact in fp32): PyTorch
# does a sliver of the work (aten::mul on one element). kagent: --torch-ops fail fails it (stage
# torch_ops, naming aten::mul); cap and allow note PyTorch's operators (far under cap's line).
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

source = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#include <cuda_runtime.h>

__global__ void scaled_relu_kernel(const float* __restrict__ x, const float* __restrict__ scale,
                                   float* __restrict__ out, long long n) {
    const float s = 2.f * scale[0];
    long long stride = (long long)gridDim.x * blockDim.x;
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += stride)
        out[i] = fmaxf(x[i], 0.f) * s;
}

torch::Tensor scaled_relu(torch::Tensor x, torch::Tensor scale) {
    TORCH_CHECK(x.is_cuda() && x.is_contiguous() && x.scalar_type() == torch::kFloat32);
    auto out = torch::empty_like(x);
    long long n = x.numel();
    int blocks = (int)std::min<long long>((n + 255) / 256, 65535LL * 8);
    scaled_relu_kernel<<<blocks, 256, 0, at::cuda::getCurrentCUDAStream()>>>(
        x.data_ptr<float>(), scale.data_ptr<float>(), out.data_ptr<float>(), n);
    return out;
}
"""

ext = load_inline(name="kagent_fixture_scaled_relu",
                  cpp_sources="torch::Tensor scaled_relu(torch::Tensor x, torch::Tensor scale);",
                  cuda_sources=source, functions=["scaled_relu"], verbose=False, extra_cuda_cflags=["-O3"])


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        scale = torch.full((1,), 0.25, device=x.device, dtype=torch.float32) * 2.0  # aten::mul: PyTorch's part
        return ext.scaled_relu(x, scale)
