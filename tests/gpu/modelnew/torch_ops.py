# No kernel of its own: forward is PyTorch's relu. kagent: correct, flag torch_ops (tier 1);
# with --allow-torch-ops, no flag and the tier its speed earns.
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x):
        return torch.relu(x)
