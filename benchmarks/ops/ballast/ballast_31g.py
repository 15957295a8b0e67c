"""A cheap problem with a heavy model, for the warm-problem eviction test
(benchmarks/mixed_batch.py eviction): forward is relu of a 1M-element input, and the model holds
BALLAST_GIB GiB of GPU memory for as long as it lives, as a plain attribute (not a parameter or
buffer, so it is never cast, exported, compared or handed to a candidate).

The four ballast files hold 28, 31, 34 and 37 GiB (130 GiB together); with KernelBench's
level1/19_ReLU beside them (6.4 GB in and 6.4 GB out, in the reference server and again in the
runner while it is evaluated) they do not fit on one 141 GB H200 at once, and any three of them
are more than half of it, so a service that keeps problems warm must let some go.
examples/kernelbench/level1/19_ReLU.cu (a native ReLU plan for any shape) solves it.

The reference server builds Model under `with torch.device("cuda", N)`, so torch.empty in
__init__ allocates on that GPU; the memory is never written or read.
"""
import torch
import torch.nn as nn

# GPU memory the model holds while it lives, GiB (each ballast file a different size, so that each
# is a problem of its own with its own reference server).
BALLAST_GIB = 31


class Ballast:
    """BALLAST_GIB GiB of GPU memory, never read. The reference's float64 twin is a copy.deepcopy of
    the model: this object gives itself as its copy, so the twin shares the allocation rather than
    doubling it."""

    def __init__(self, gib):
        self.memory = torch.empty(int(gib * 2**30), dtype=torch.uint8)

    def __deepcopy__(self, memo):
        return self


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.ballast = Ballast(BALLAST_GIB)  # a plain attribute: not in parameters(), buffers() or state_dict()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(x)


def get_inputs():
    return [torch.randn(1024, 1024)]  # 1M elements, half of them negative


def get_init_inputs():
    return []
