# A load_inline extension that does not compile (a missing semicolon). kagent: compile failed
# (tier -1) with the compiler's message, as for an NVRTC error.
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

source = r"""
#include <torch/extension.h>
torch::Tensor relu(torch::Tensor x) { return x.clamp_min(0) }
"""
ext = load_inline(name="kagent_fixture_build_error", cpp_sources=source, functions=["relu"], verbose=False)


class ModelNew(nn.Module):
    def forward(self, x):
        return ext.relu(x)
