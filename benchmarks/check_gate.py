#!/usr/bin/env python3
"""check_gate: how `kagent check`'s regression gate behaves on this GPU, run as a CI job would run
it (the CLI, one process per check). For each case, N checks with --max-regression MARGIN:
how many passed, the range of the measured time ratios (new / baseline) and of their 95%
intervals' widths, the pairs sampled, and the median wall time of one `kagent check` (compile
from the cache, correctness, timing, A/B), next to the same kernel checked without a baseline.

Usage: check_gate.py [--kagent build/kagent] [--runs 10] [--margin 3]
"""
import argparse
import json
import os
import statistics
import subprocess
import time

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OP = os.path.join(HERE, "examples/vector_add/op.json")
K = lambda name: os.path.join(HERE, "tests/gpu/kernels", name)
E = lambda rel: os.path.join(HERE, "examples", rel)

CASES = [
    # name, kernel, baseline (None: no A/B)
    ("fma_chain +10% vs fma_chain", K("fma_chain_10pct_slower.cu"), K("fma_chain.cu")),
    ("fma_chain vs itself", K("fma_chain.cu"), K("fma_chain.cu")),
    ("fma_chain, no baseline", K("fma_chain.cu"), None),
    ("cand_naive vs itself (memory-bound)", E("vector_add/cand_naive.cu"), E("vector_add/cand_naive.cu")),
    ("cand_naive, no baseline", E("vector_add/cand_naive.cu"), None),
]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kagent", default="build/kagent")
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--margin", type=float, default=3.0)
    args = ap.parse_args()
    print(f"{args.runs} checks per case, --max-regression {args.margin}%")
    fmt = "{:38} {:>6} {:>17} {:>15} {:>9} {:>8}"
    print(fmt.format("case", "passed", "ratio min..max", "CI width max %", "pairs", "wall s"))
    for name, kernel, base in CASES:
        cmd = [args.kagent, "check", kernel, "--op", OP, "--json", "--max-regression", str(args.margin)]
        if base:
            cmd += ["--baseline", base]
        passed, ratios, widths, pairs, walls = 0, [], [], [], []
        for _ in range(args.runs):
            t0 = time.monotonic()
            r = subprocess.run(cmd, capture_output=True, text=True)
            walls.append(time.monotonic() - t0)
            v = json.loads(r.stdout)[0]
            passed += v["status"] == "pass"
            if "baseline" in v:
                ratio = v["baseline"]["ratio"]
                ratios.append(ratio["median"])
                widths.append(100 * (ratio["high"] - ratio["low"]))
                pairs.append(ratio["n"])
        rr = f"{min(ratios):.4f}..{max(ratios):.4f}" if ratios else "-"
        w = f"{max(widths):.2f}" if widths else "-"
        p = f"{min(pairs)}..{max(pairs)}" if pairs else "-"
        print(fmt.format(name, f"{passed}/{args.runs}", rr, w, p, f"{statistics.median(walls):.2f}"))


if __name__ == "__main__":
    main()
