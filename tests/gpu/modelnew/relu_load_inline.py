# A correct ReLU through torch's load_inline (a float4 grid-stride kernel). Problem: a ReLU
# (KernelBench level1/19_ReLU, or test_modelnew.cpp's small copy). kagent: correct, a tier >= 1.
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

source = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#include <cuda_runtime.h>

__global__ void relu_kernel(const float* __restrict__ x, float* __restrict__ out, long long n) {
    long long n4 = n / 4;
    const float4* x4 = reinterpret_cast<const float4*>(x);
    float4* o4 = reinterpret_cast<float4*>(out);
    long long stride = (long long)gridDim.x * blockDim.x;
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n4; i += stride) {
        float4 v = x4[i];
        v.x = fmaxf(v.x, 0.f); v.y = fmaxf(v.y, 0.f); v.z = fmaxf(v.z, 0.f); v.w = fmaxf(v.w, 0.f);
        o4[i] = v;
    }
    for (long long i = n4 * 4 + blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += stride)
        out[i] = fmaxf(x[i], 0.f);
}

torch::Tensor relu_cuda(torch::Tensor x) {
    TORCH_CHECK(x.is_cuda() && x.is_contiguous() && x.scalar_type() == torch::kFloat32);
    auto out = torch::empty_like(x);
    long long n = x.numel();
    int blocks = (int)std::min<long long>((n / 4 + 255) / 256 + 1, 65535LL * 8);
    relu_kernel<<<blocks, 256, 0, at::cuda::getCurrentCUDAStream()>>>(x.data_ptr<float>(), out.data_ptr<float>(), n);
    return out;
}
"""

relu_ext = load_inline(name="kagent_fixture_relu", cpp_sources="torch::Tensor relu_cuda(torch::Tensor x);",
                       cuda_sources=source, functions=["relu_cuda"], verbose=False,
                       extra_cuda_cflags=["-O3"], extra_include_paths=[])


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return relu_ext.relu_cuda(x)
