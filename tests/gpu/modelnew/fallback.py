# A "custom kernel" that always fails, caught by try/except that falls back to PyTorch. kagent:
# correct, flag torch_ops (tier <= 1); the static check reports the fallback.
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

source = r"""
#include <torch/extension.h>
torch::Tensor broken_relu(torch::Tensor x) { TORCH_CHECK(false, "not implemented"); return x; }
"""
ext = load_inline(name="kagent_fixture_fallback", cpp_sources=source, functions=["broken_relu"], verbose=False)


class ModelNew(nn.Module):
    def forward(self, x):
        try:
            return ext.broken_relu(x)
        except Exception:
            return torch.relu(x)
