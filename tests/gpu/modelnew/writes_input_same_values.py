# Writes its result into its input and returns the input: y = relu(x); x.copy_(y); return x. On a
# problem whose inputs come from torch.rand (all non-negative, as KernelBench's level1/19_ReLU) the
# values written equal the values there, so no comparison of values sees the write; the output's
# memory is the input's. kagent: incorrect, failure stage "inputs".
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x):
        y = torch.relu(x)
        x.copy_(y)
        return x
