# The Triton ReLU of relu_triton.py made about 10% slower by a steady amount: a second kernel reads
# the first tenth of the output back and writes it again (+10% memory traffic, one more launch). `kagent check` with relu_triton.py as
# the baseline at a 3% margin must fail it (benchmarks/modelnew_check_margin.sh).
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def relu_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, tl.maximum(x, 0.0), mask=mask)


@triton.jit
def rewrite_kernel(out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    y = tl.load(out_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, tl.maximum(y, 0.0), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        n = x.numel()
        grid = (triton.cdiv(n, 4096),)
        relu_kernel[grid](x, out, n, BLOCK=4096)
        tenth = n // 10
        rewrite_kernel[(triton.cdiv(tenth, 4096),)](out, tenth, BLOCK=4096)
        return out
