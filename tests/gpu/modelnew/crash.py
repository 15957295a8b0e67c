# A kernel that stores through a wild pointer (an illegal address: the CUDA context is lost).
# kagent: incorrect, failure stage "launch" or "crash"; the worker is discarded and the next
# evaluation works.
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

source = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
__global__ void wild_store(float* out) { ((float*)0x10)[threadIdx.x] = 1.0f; out[threadIdx.x] = 0.f; }
torch::Tensor crash(torch::Tensor x) {
    auto out = torch::empty_like(x);
    wild_store<<<1, 32, 0, at::cuda::getCurrentCUDAStream()>>>(out.data_ptr<float>());
    return out;
}
"""
ext = load_inline(name="kagent_fixture_crash", cpp_sources="torch::Tensor crash(torch::Tensor x);",
                  cuda_sources=source, functions=["crash"], verbose=False)


class ModelNew(nn.Module):
    def forward(self, x):
        return ext.crash(x)
