# Not a solution: defines Model (a problem file's class) and no ModelNew. kagent eval: exit 2,
# "defines no ModelNew".
import torch


class Model(torch.nn.Module):
    def forward(self, x):
        return torch.relu(x)
