#!/usr/bin/env python3
"""ncu_agreement: kagent's timing against Nsight Compute on the same kernels.

For each case: the median of kagent's candidate medians over --evals runs of `kagent eval --json`,
and the median of `ncu --clock-control none --metrics gpu__time_duration.sum` over the profiled
launches of the same kernel inside `kagent eval` (ncu follows kagent into kagent-runner). Prints a
table of both and their ratio. Standard library only. Needs a GPU and ncu on PATH.
"""
import argparse
import csv
import io
import json
import os
import statistics
import subprocess
import sys

CASES = [
    # candidate, op, kernel
    ("examples/vector_add/cand_naive.cu", "examples/vector_add/op.json", "vector_add_grid_stride"),
    ("examples/softmax/cand_online.cu", "examples/softmax/op.json", "softmax_online"),
    ("examples/softmax/ref.cu", "examples/softmax/op.json", "softmax_ref"),
    # The same kernel almost empty and 4x longer: shows whether a difference is fixed or proportional.
    ("examples/vector_add/cand_naive.cu", "benchmarks/ops/tiny_add/op.json", "vector_add_grid_stride"),
    ("examples/vector_add/cand_naive.cu", "benchmarks/ops/big_add/op.json", "vector_add_grid_stride"),
]


def kagent_median(kagent, cand, op, evals):
    medians = []
    for _ in range(evals):
        out = subprocess.run([kagent, "eval", "--json", cand, "--op", op], capture_output=True, text=True, check=False,
                             timeout=120)
        j = json.loads(out.stdout)
        medians.append(j["outcome"]["candidate_time"]["median_ms"])
    return statistics.median(medians), medians


def ncu_median(kagent, cand, op, kernel, skip, count, timeout):
    cmd = ["ncu", "--clock-control", "none", "--metrics", "gpu__time_duration.sum", "--kernel-name", kernel,
           "--launch-skip", str(skip), "--launch-count", str(count), "--target-processes", "all", "--csv",
           "--print-units", "base", kagent, "eval", "--timeout", "600", cand, "--op", op]
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, check=False, timeout=timeout)
    except subprocess.TimeoutExpired as e:
        sys.stderr.write(f"ncu timed out after {timeout} s\n{(e.stdout or b'')[-2000:]}\n")
        return None, 0
    if "no network namespace" not in out.stdout + out.stderr:
        sys.stderr.write("note: kagent did not report leaving the network namespace under ncu\n")
    rows = [line for line in out.stdout.splitlines() if line.startswith('"')]
    values = []
    for row in csv.DictReader(io.StringIO("\n".join(rows))):
        if row.get("Metric Name") == "gpu__time_duration.sum":
            unit = row.get("Metric Unit", "nsecond")
            v = float(row["Metric Value"].replace(",", ""))
            scale = {"nsecond": 1e-6, "usecond": 1e-3, "msecond": 1.0, "second": 1e3}.get(unit, 1e-6)
            values.append(v * scale)
    if not values:
        sys.stderr.write(out.stdout[-3000:] + out.stderr[-3000:])
        return None, 0
    return statistics.median(values), len(values)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kagent", default="build/kagent")
    ap.add_argument("--evals", type=int, default=3)
    ap.add_argument("--skip", type=int, default=100, help="launches of the kernel to skip (correctness, warm-up)")
    ap.add_argument("--count", type=int, default=200)
    ap.add_argument("--timeout", type=int, default=150, help="seconds per ncu run")
    a = ap.parse_args()
    print(f"{'kernel (op)':<36} {'kagent median ms':>17} {'ncu median ms':>14} {'ncu n':>6} {'kagent/ncu':>11} {'diff us':>8}")
    for cand, op, kernel in CASES:
        km, all_medians = kagent_median(a.kagent, cand, op, a.evals)
        nm, n = ncu_median(a.kagent, cand, op, kernel, a.skip, a.count, a.timeout)
        ratio = f"{km / nm:.4f}" if nm else "n/a"
        nms = f"{nm:.4f}" if nm else "n/a"
        diff = f"{(km - nm) * 1e3:.1f}" if nm else "n/a"
        label = f"{kernel} ({os.path.basename(os.path.dirname(op))})"
        print(f"{label:<36} {km:>17.4f} {nms:>14} {n:>6} {ratio:>11} {diff:>8}   (kagent medians {', '.join(f'{m:.4f}' for m in all_medians)})")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
