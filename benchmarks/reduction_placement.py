#!/usr/bin/env python3
"""Does a streaming kernel's speed depend on where its 8.6 GB input lands? The native solution of
KernelBench level1/49 (max over the middle dim of a [128, 4096, 4095] fp32 tensor) runs at one of two
speeds under `kagent eval`, fixed for a process's life (RESULTS.md, 2026-11-29 and 2026-11-30). This
probe times the same kernel outside kagent, in a plain PyTorch process, over fresh allocations of the
input, each freed (and the caching allocator emptied) before the next:

    python3 benchmarks/reduction_placement.py examples/kernelbench/level1/49_Max_reduction_over_a_dimension.cu
        [--allocs 6]          allocations per process
        [--mode pad|offset]   pad: every other allocation made with 0.7-3.7 GB allocated before it, so
                              it lands elsewhere; offset: every other one at the runner's 64 KiB
                              guard-band offset from a 2 MB boundary, with and without a 120 MiB write
                              (an L2 flush that leaves dirty lines) before each launch

Each row: the input's address, the kernel's median of 15 launches (CUDA events), torch.amax's over the
same tensor, and whether the kernel's output equals torch.amax's. Run it in several processes to see
whether the speed varies between them. Needs a GPU and a CUDA toolkit for load_inline (ninja).
"""
import argparse
import sys

import torch
from torch.utils.cpp_extension import load_inline

GUARD_FLOATS = (64 << 10) // 4  # the runner's front guard band (kagent/protocol/guard_bands.hpp)
SHAPE = (128, 4096, 4095)

LAUNCHER = r"""
#include <torch/extension.h>
void launch(torch::Tensor x, torch::Tensor out) {
  long long K = x.size(1), N = x.size(2);
  dim3 grid((N + 31) / 32, x.size(0)), block(32, 8);
  max_dim1<<<grid, block>>>(x.data_ptr<float>(), out.data_ptr<float>(), K, N);
}
"""


def median_ms(fn, reps=15):
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
    fn()
    torch.cuda.synchronize()
    for s, e in zip(starts, ends):
        s.record()
        fn()
        e.record()
    torch.cuda.synchronize()
    v = sorted(s.elapsed_time(e) for s, e in zip(starts, ends))
    return v[len(v) // 2]


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("solution", help="the level1/49 native solution (.cu with a kagent plan comment; kernel max_dim1)")
    p.add_argument("--allocs", type=int, default=6)
    p.add_argument("--mode", choices=["pad", "offset"], default="pad")
    a = p.parse_args()
    src = open(a.solution).read()
    src = src[src.index("*/") + 2:]  # the kernel after the plan comment
    m = load_inline("reduction_placement", "void launch(torch::Tensor x, torch::Tensor out);",
                    cuda_sources=src + LAUNCHER, functions=["launch"], extra_cuda_cflags=["-O3"])
    out = torch.empty(SHAPE[0], SHAPE[2], device="cuda")
    flush = torch.empty(120 << 18, device="cuda")  # 120 MiB of fp32
    gen = torch.Generator(device="cuda").manual_seed(1)
    n = SHAPE[0] * SHAPE[1] * SHAPE[2]
    for i in range(a.allocs):
        pad = None
        if a.mode == "pad":
            if i % 2:
                pad = torch.empty(((i * 733) % 4096) << 18, device="cuda")
            buf = torch.empty(n, device="cuda")
            x = buf.view(SHAPE)
        else:
            off = GUARD_FLOATS if i % 2 else 0
            buf = torch.empty(n + 2 * GUARD_FLOATS, device="cuda")
            x = buf[off:off + n].view(SHAPE)
        x.uniform_(generator=gen)
        k = median_ms(lambda: m.launch(x, out))
        amax = median_ms(lambda: torch.amax(x, 1))
        equal = torch.equal(out, torch.amax(x, 1))
        row = f"alloc {i}: ptr {x.data_ptr():#x} kernel {k:.3f} ms torch.amax {amax:.3f} ms equal {equal}"
        if a.mode == "pad":
            row += f" (allocated before it: {0 if pad is None else pad.numel() * 4 >> 20} MiB)"
        else:
            flushed = median_ms(lambda: (flush.zero_(), m.launch(x, out)))
            alone = median_ms(lambda: flush.zero_())
            row += f" offset {(x.data_ptr() - buf.data_ptr()) >> 10} KiB; after a 120 MiB write {flushed - alone:.3f} ms"
        print(row, flush=True)
        del x, buf, pad
        torch.cuda.empty_cache()
    return 0


if __name__ == "__main__":
    sys.exit(main())
