#!/usr/bin/env python3
"""multi_gpu_bench: `kagent bench` over a KernelBench folder with the examples/kernelbench fixtures
as solutions, on GPU 0 alone and then on GPUs 0,1 (or --gpus), side by side in one call: the tiers
must be the same problem by problem (speedups within timing noise), and the wall time shows what
the second GPU buys. A first run on all the GPUs fills the compile and baseline caches, so the two
timed runs compare the same work.

Usage: multi_gpu_bench.py [--kagent build/kagent] [--kernelbench DIR] [--level level1] [--gpus 0,1]
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time


def bench(kagent, level_dir, solutions, gpus, out):
    t0 = time.monotonic()
    r = subprocess.run([kagent, "bench", level_dir, "--solutions", solutions, "--gpus", gpus, "--out", out],
                       capture_output=True, text=True)
    wall = time.monotonic() - t0
    if r.returncode != 0:
        print(f"kagent bench --gpus {gpus} exited {r.returncode}:\n{r.stderr[-2000:]}", file=sys.stderr)
    records = {}
    with open(out) as f:
        for line in f:
            if line.strip():
                j = json.loads(line)
                records[j["problem"]] = j
    return wall, records


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kagent", default="build/kagent")
    ap.add_argument("--kernelbench", default=os.environ.get("KAGENT_KERNELBENCH_DIR", "../shared/kernelbench"))
    ap.add_argument("--level", default="level1")
    ap.add_argument("--gpus", default="0,1")
    args = ap.parse_args()
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    solutions = os.path.join(here, "examples", "kernelbench")
    level_dir = os.path.join(args.kernelbench, args.level)
    with tempfile.TemporaryDirectory() as tmp:
        bench(args.kagent, level_dir, solutions, args.gpus, os.path.join(tmp, "warm.jsonl"))
        one_s, one = bench(args.kagent, level_dir, solutions, "0", os.path.join(tmp, "one.jsonl"))
        many_s, many = bench(args.kagent, level_dir, solutions, args.gpus, os.path.join(tmp, "many.jsonl"))
    solved = sorted(p for p, r in one.items() if r.get("status") != "unsolved")
    fmt = "{:48} {:>10} {:>10} {:>5} {:>5} {:>9} {:>9}"
    print(fmt.format("problem", "status 0", f"status {args.gpus}", "tier", "tier", "x eager", "x eager"))
    same, errors = 0, 0
    for p in solved:
        a, b = one[p], many.get(p, {})
        errors += a.get("status") == "error" or b.get("status") == "error"
        same += a.get("tier") == b.get("tier") and a.get("status") == b.get("status")
        f = lambda v: "-" if v is None else f"{v:.3f}"
        print(fmt.format(p, a.get("status", "-"), b.get("status", "-"), str(a.get("tier")), str(b.get("tier")),
                         f(a.get("speedup_vs_eager")), f(b.get("speedup_vs_eager"))))
    gpus_used = sorted({r.get("gpu") for r in many.values() if r.get("gpu") is not None})
    print(f"{len(solved)} evaluated problems of {len(one)}; same status and tier on both runs: {same}/{len(solved)}; "
          f"harness errors: {errors}")
    print(f"wall --gpus 0: {one_s:.1f} s; --gpus {args.gpus}: {many_s:.1f} s (GPUs used {gpus_used}); "
          f"speedup {one_s / many_s:.2f}x")
    return 0 if errors == 0 and same == len(solved) else 1


if __name__ == "__main__":
    sys.exit(main())
