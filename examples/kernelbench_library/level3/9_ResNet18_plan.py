#!/usr/bin/env python3
"""Writes the launch plan of 9_ResNet18.cu (KernelBench level3/9_ResNet18, batch 2, 3 x 224 x 224).

ResNet18 is 20 convolutions, 20 BatchNorms, a max pool, an average pool and a linear layer: 80
launches whose tensor names follow the module tree (layer2_0_downsample_1_weight, ...). Writing them
by hand invites typos, so this script writes them with tools/kagent_plan and replaces the plan block
of 9_ResNet18.cu, keeping its kernels. Run it after changing either:

    python3 examples/kernelbench_library/level3/9_ResNet18_plan.py

then check the result without a GPU: kagent compile examples/kernelbench_library/level3/9_ResNet18.cu
--op ../shared/kernelbench/level3/9_ResNet18.py. Shapes are the problem's fixed ones (batch 2,
224 x 224), computed here; the kernels take every extent as an argument.
"""
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "..", "tools"))
from kagent_plan import Plan  # noqa: E402

BATCH, SIZE = 2, 224
SLICES = 8  # per channel in channel_partials; keep equal to the kernel's SLICES


def main():
    p = Plan(graph=True)
    max_c = 512
    part = p.buffer("part", "f64", [max_c * SLICES * 2])
    aff_a = p.buffer("aff_a", "f32", [max_c * 2])
    aff_b = p.buffer("aff_b", "f32", [max_c * 2])
    count = [0]

    def act(c, h):
        count[0] += 1
        return p.buffer(f"act{count[0]}", "f32", [BATCH, c, h, h])

    def batch_norm(t, c, h, prefix, affine):
        """The batch statistics of t (training-mode BatchNorm) folded with prefix's gamma and beta."""
        p.kernel("channel_partials", [c * SLICES], [256], [t, part, f"i32:{BATCH}", f"i32:{c}", f"i64:{h * h}"])
        p.kernel("channel_affine", [1], [c], [part, f"{prefix}_weight", f"{prefix}_bias", affine, f"i32:{c}",
                                               f"i64:{BATCH * h * h}"])

    def elementwise_grid(c, h):
        return [(BATCH * c * h * h + 1023) // 1024]

    # Stem: conv 7x7 / 2, BatchNorm + ReLU, max pool 3x3 / 2.
    h = SIZE // 2
    stem = act(64, h)
    p.conv(x="x", w="conv1_weight", y=stem, stride=2, padding=3)
    batch_norm(stem, 64, h, "bn1", aff_a)
    p.kernel("affine_relu", elementwise_grid(64, h), [256], [stem, aff_a, f"i64:{BATCH * 64 * h * h}", "i32:64",
                                                             f"i64:{h * h}"])
    h_pool = h // 2
    x = act(64, h_pool)
    p.kernel("max_pool_3x3_s2", [(BATCH * 64 * h_pool * h_pool + 255) // 256], [256],
             [stem, x, f"i32:{BATCH * 64}", f"i32:{h}", f"i32:{h}", f"i32:{h_pool}", f"i32:{h_pool}"])
    h, c_in = h_pool, 64

    for layer, (c, stride) in enumerate([(64, 1), (128, 2), (256, 2), (512, 2)], start=1):
        for block in range(2):
            s = stride if block == 0 else 1
            name = f"layer{layer}_{block}"
            h_out = h // s
            y1 = act(c, h_out)
            p.conv(x=x, w=f"{name}_conv1_weight", y=y1, stride=s, padding=1)
            batch_norm(y1, c, h_out, f"{name}_bn1", aff_a)
            n = BATCH * c * h_out * h_out
            p.kernel("affine_relu", elementwise_grid(c, h_out), [256], [y1, aff_a, f"i64:{n}", f"i32:{c}",
                                                                        f"i64:{h_out * h_out}"])
            y2 = act(c, h_out)
            p.conv(x=y1, w=f"{name}_conv2_weight", y=y2, stride=1, padding=1)
            batch_norm(y2, c, h_out, f"{name}_bn2", aff_a)
            if block == 0 and (s != 1 or c_in != c):
                short = act(c, h_out)
                p.conv(x=x, w=f"{name}_downsample_0_weight", y=short, stride=s)
                batch_norm(short, c, h_out, f"{name}_downsample_1", aff_b)
                p.kernel("add_affine_relu", elementwise_grid(c, h_out), [256],
                         [y2, aff_a, short, aff_b, f"i64:{n}", f"i32:{c}", f"i64:{h_out * h_out}"])
            else:
                p.kernel("affine_add_relu", elementwise_grid(c, h_out), [256],
                         [y2, aff_a, x, f"i64:{n}", f"i32:{c}", f"i64:{h_out * h_out}"])
            x, h, c_in = y2, h_out, c

    pooled = p.buffer("pooled", "f32", [BATCH, 512])
    p.kernel("mean_pool", [BATCH * 512], [64], [x, pooled, f"i32:{h * h}"])
    p.gemm(a=pooled, b="fc_weight", trans_b=True, d="out", bias="fc_bias", m="pooled.shape[0]",
           n="fc_weight.shape[0]", k="pooled.shape[1]")

    path = os.path.join(HERE, "9_ResNet18.cu")
    with open(path, encoding="utf-8") as f:
        source = f.read()
    kernels = re.sub(r"/\*kagent.*?\*/\n*", "", source, flags=re.S).strip("\n")
    p.write(path, source=kernels)
    print(f"{path}: {len(p.steps)} launches, {len(p.scratch)} scratch buffers")


if __name__ == "__main__":
    main()
