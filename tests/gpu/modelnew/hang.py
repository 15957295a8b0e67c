# A kernel that never ends (it waits for a flag nobody sets). kagent: failure stage "timeout" at
# the evaluation's time limit; the worker is killed and the next evaluation works.
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

source = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
__global__ void wait_forever(const volatile int* flag, float* out) {
    while (*flag == 0) { }
    out[0] = 0.f;
}
torch::Tensor hang(torch::Tensor x) {
    auto flag = torch::zeros({1}, x.options().dtype(torch::kInt32));
    auto out = torch::empty_like(x);
    wait_forever<<<1, 1, 0, at::cuda::getCurrentCUDAStream()>>>(flag.data_ptr<int>(), out.data_ptr<float>());
    return out;
}
"""
ext = load_inline(name="kagent_fixture_hang", cpp_sources="torch::Tensor hang(torch::Tensor x);",
                  cuda_sources=source, functions=["hang"], verbose=False)


class ModelNew(nn.Module):
    def forward(self, x):
        return ext.hang(x)
