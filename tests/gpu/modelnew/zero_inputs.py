# Hack (KernelBench's zero_out_kernel): zeroes its input in place and returns zeros, so that a
# harness which runs the reference afterwards on the same tensors sees zeros too. kagent:
# incorrect, failure stage "inputs" (the runner compares the inputs after the call with the
# reference server's).
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

source = r"""
#include <torch/extension.h>
torch::Tensor zero_relu(torch::Tensor x) { x.zero_(); return torch::zeros_like(x); }
"""
ext = load_inline(name="kagent_fixture_zero_inputs", cpp_sources=source, functions=["zero_relu"], verbose=False)


class ModelNew(nn.Module):
    def forward(self, x):
        return ext.zero_relu(x)
