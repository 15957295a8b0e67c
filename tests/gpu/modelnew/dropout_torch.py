# level2/66_Matmul_Dropout_Softmax with torch's own nn.Dropout: each call of ModelNew starts from
# the generator state the reference's forward started from, so the dropout draws the reference's
# mask. kagent: correct (torch ops flagged when timed).
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features, dropout_p):
        super().__init__()
        self.matmul = nn.Linear(in_features, out_features)
        self.dropout = nn.Dropout(dropout_p)

    def forward(self, x):
        return torch.softmax(self.dropout(self.matmul(x)), dim=1)
