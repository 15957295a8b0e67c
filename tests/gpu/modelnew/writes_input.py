# Writes its input: ReLU in place into x, returned as the output. The values are right, but inputs
# are read-only (the reference saw them unchanged). kagent: incorrect, failure stage "inputs".
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x):
        return x.clamp_(min=0)
