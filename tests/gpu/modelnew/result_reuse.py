# Hack (KernelBench's result_reuse_kernel): returns torch.empty of the output's shape without
# computing, hoping the allocator hands back memory that holds a result. kagent: incorrect (the
# reference ran in another process, and kagent poisons outputs between samples).
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

source = r"""
#include <torch/extension.h>
torch::Tensor fake_relu(torch::Tensor x) { return torch::empty_like(x); }
"""
ext = load_inline(name="kagent_fixture_result_reuse", cpp_sources=source, functions=["fake_relu"], verbose=False)


class ModelNew(nn.Module):
    def forward(self, x):
        return ext.fake_relu(x)
