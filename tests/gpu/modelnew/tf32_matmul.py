# A matrix product on TF32 tensor cores under fp32 (the TF32 switches on for the call, put back
# after). Problem: test_modelnew.cpp's matmul (1024 x 1024, torch.rand). kagent: at a tolerance its
# elements pass (1e-2) it fails the precision rule (stage precision); under --precision tf32 it is
# correct.
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, A, B):
        before = torch.backends.cuda.matmul.allow_tf32
        torch.backends.cuda.matmul.allow_tf32 = True
        try:
            return A @ B
        finally:
            torch.backends.cuda.matmul.allow_tf32 = before
