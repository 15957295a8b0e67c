#!/usr/bin/env python3
"""Where TF32's error comes from: input rounding or the tensor cores' accumulation.

For square fp32 GEMMs of torch.rand (non-negative) and torch.randn inputs, the relative L2 error
against fp64 of: fp32 (TF32 off); TF32; 3xTF32 (A_hi B_hi + A_hi B_lo + A_lo B_hi, each a TF32
product over all of K, the hi parts A truncated to TF32's 10 mantissa bits, or rounded to nearest);
the hi x hi product alone against the fp64 product of the same TF32-exact inputs (no input rounding
left: what remains is the accumulation's); the three products with TF32 off. Where the last two
columns but one agree with TF32, the tensor cores' accumulation, not input rounding, is TF32's
error, and no 3xTF32 kernel that sums all of K in them is more accurate than TF32.

    python3 benchmarks/tf32_accumulation.py
"""

import torch


def tf32_truncated(x):
    return (x.contiguous().view(torch.int32) & -8192).view(torch.float32)


def tf32_rounded(x):
    return ((x.contiguous().view(torch.int32) + 4096) & -8192).view(torch.float32)


def rel(out, ref):
    return ((out.double() - ref).norm() / ref.norm()).item()


def mm(a, b, tf32):
    torch.backends.cuda.matmul.allow_tf32 = tf32
    try:
        return a @ b
    finally:
        torch.backends.cuda.matmul.allow_tf32 = False


def main():
    torch.manual_seed(0)
    print(f"{torch.cuda.get_device_name()}, torch {torch.__version__}")
    print(f"{'inputs':<7} {'n':>5} {'fp32':>9} {'tf32':>9} {'3x trunc':>9} {'3x round':>9} {'hi x hi':>9} "
          f"{'3x fp32':>9}")
    for name, gen in (("rand", torch.rand), ("randn", torch.randn)):
        for n in (1024, 4096):
            a, b = gen(n, n, device="cuda"), gen(n, n, device="cuda")
            ref = a.double() @ b.double()
            three = {}
            for split, f in (("t", tf32_truncated), ("r", tf32_rounded)):
                ah, bh = f(a), f(b)
                al, bl = a - ah, b - bh
                three[split] = rel(mm(ah, bh, True) + (mm(ah, bl, True) + mm(al, bh, True)), ref)
            ah, bh = tf32_rounded(a), tf32_rounded(b)
            hi = rel(mm(ah, bh, True), ah.double() @ bh.double())
            al, bl = a - ah, b - bh
            three_fp32 = rel(mm(ah, bh, False) + (mm(ah, bl, False) + mm(al, bh, False)), ref)
            print(f"{name:<7} {n:>5} {rel(mm(a, b, False), ref):9.2e} {rel(mm(a, b, True), ref):9.2e} "
                  f"{three['t']:9.2e} {three['r']:9.2e} {hi:9.2e} {three_fp32:9.2e}", flush=True)


if __name__ == "__main__":
    main()
