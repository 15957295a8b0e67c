import torch
import torch.nn as nn

class Model(nn.Module):
    """
    Simple model that performs a Linear layer (Gemm with bias) followed by ReLU.
    """
    def __init__(self, in_features, out_features):
        super(Model, self).__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """
        Applies the linear layer and ReLU.

        Args:
            x (torch.Tensor): Input tensor of shape (batch_size, in_features).

        Returns:
            torch.Tensor: Output tensor of shape (batch_size, out_features).
        """
        x = self.linear(x)
        return torch.relu(x)

batch_size = 128
in_features = 256
out_features = 256

def get_inputs():
    x = torch.randn(batch_size, in_features)
    return [x]

def get_init_inputs():
    return [in_features, out_features]
