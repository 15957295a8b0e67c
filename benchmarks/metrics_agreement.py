#!/usr/bin/env python3
"""metrics_agreement: kagent's hardware counters (`kagent profile --json`, CUPTI range profiler
inside the runner) against Nsight Compute's for the same kernels: `ncu --clock-control none
--metrics ...` over `kagent eval --no-timing` (the correctness trials' launches of that kernel;
the median of each metric over them). Prints one row per kernel and metric with both values and
the difference in percentage points (target: 5 points), then the counts behind the roofline (DRAM
bytes, FP32 FLOPs: 2 x FFMA + FADD + FMUL) with their ratio.

Usage: metrics_agreement.py [--kagent build/kagent] [--ncu ncu]
"""
import argparse
import csv
import io
import json
import os
import statistics
import subprocess

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CASES = [
    # kernel file, op, kernel name
    ("examples/vector_add/cand_naive.cu", "benchmarks/ops/big_add/op.json", "vector_add_grid_stride"),
    ("tests/gpu/kernels/fma_chain.cu", "examples/vector_add/op.json", "vector_add_fma_chain"),
    ("examples/softmax/cand_online.cu", "examples/softmax/op.json", "softmax_online"),
]
METRICS = [
    ("dram_pct", "dram__throughput.avg.pct_of_peak_sustained_elapsed"),
    ("sm_pct", "sm__throughput.avg.pct_of_peak_sustained_elapsed"),
    ("occupancy_pct", "sm__warps_active.avg.pct_of_peak_sustained_active"),
    ("l2_hit_pct", "lts__t_sector_hit_rate.pct"),
    ("l1_hit_pct", "l1tex__t_sector_hit_rate.pct"),
]
# Counts, compared as ratios: kagent's field, and ncu's metrics with their weights.
COUNTS = [
    ("dram_bytes", [("dram__bytes.sum", 1)]),
    ("fp32_flops", [("sm__sass_thread_inst_executed_op_ffma_pred_on.sum", 2),
                    ("sm__sass_thread_inst_executed_op_fadd_pred_on.sum", 1),
                    ("sm__sass_thread_inst_executed_op_fmul_pred_on.sum", 1)]),
]
NCU_METRICS = [m for _, m in METRICS] + [m for _, parts in COUNTS for m, _ in parts]


def ncu_values(args, cand, op, kernel):
    cmd = [args.ncu, "--clock-control", "none", "--csv", "--page", "raw", "-k", f"regex:^{kernel}$",
           "--launch-count", "5", "--metrics", ",".join(NCU_METRICS),
           args.kagent, "eval", cand, "--op", op, "--no-timing"]
    r = subprocess.run(cmd, capture_output=True, text=True)
    lines = [l for l in r.stdout.splitlines() if l.startswith('"')]
    rows = list(csv.reader(io.StringIO("\n".join(lines))))
    if len(rows) < 3:
        raise RuntimeError(f"ncu gave no rows for {kernel}: {r.stderr[-500:]}{r.stdout[-500:]}")
    header, data = rows[0], rows[2:]  # the second row holds units
    def median(metric):
        col = header.index(metric)
        return statistics.median(float(row[col].replace(",", "")) for row in data if row[col] not in ("", "n/a"))

    out = {key: median(metric) for key, metric in METRICS}
    # ncu's units for dram__bytes.sum follow the size (byte, Kbyte, Mbyte, Gbyte): the units row says which.
    units = rows[1]
    scale = {"byte": 1, "Kbyte": 1e3, "Mbyte": 1e6, "Gbyte": 1e9, "inst": 1, "": 1}
    for key, parts in COUNTS:
        out[key] = sum(w * median(m) * scale.get(units[header.index(m)], 1) for m, w in parts)
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kagent", default="build/kagent")
    ap.add_argument("--ncu", default="ncu")
    args = ap.parse_args()
    fmt = "{:26} {:14} {:>9} {:>9} {:>9}"
    print(fmt.format("kernel", "metric", "kagent", "ncu", "diff pp"))
    worst = 0.0
    for cand, op, kernel in CASES:
        cand, op = os.path.join(HERE, cand), os.path.join(HERE, op)
        r = subprocess.run([args.kagent, "profile", cand, "--op", op, "--json"], capture_output=True, text=True)
        j = json.loads(r.stdout)
        if "counters" not in j:
            print(f"{kernel}: kagent has no counters: {j.get('counters_note')}")
            continue
        ours = j["counters"][0]
        theirs = ncu_values(args, cand, op, kernel)
        for key, _ in METRICS:
            d = ours[key] - theirs[key]
            worst = max(worst, abs(d))
            print(fmt.format(kernel, key, f"{ours[key]:.1f}", f"{theirs[key]:.1f}", f"{d:+.1f}"))
        for key, _ in COUNTS:
            ratio = ours[key] / theirs[key] if theirs[key] else float("nan")
            print(fmt.format(kernel, key, f"{ours[key]:.4g}", f"{theirs[key]:.4g}", f"x{ratio:.4f}"))
        print(fmt.format(kernel, "limiter", ours["limiter"], "", ""))
        roof = ours.get("roofline")
        if roof:
            print(fmt.format(kernel, "roofline", f"{roof['roof']}", f"{100 * roof['roof_share']:.0f}% of roof", ""))
    print(f"largest difference: {worst:.1f} percentage points")


if __name__ == "__main__":
    main()
