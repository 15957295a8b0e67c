# Lower precision than the run's: a matrix product computed in fp16. Problem: a matrix product
# (KernelBench level1/1_Square_matrix_multiplication_, or test_modelnew.cpp's small copy) under
# --precision fp32. kagent: incorrect (outside the fp32 tolerance).
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, A, B):
        return (A.half() @ B.half()).float()
