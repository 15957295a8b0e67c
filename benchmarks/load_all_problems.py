#!/usr/bin/env python3
"""load_all_problems: can kagent express every KernelBench problem? For each problem file of the
level folders, what the reference server does on `load` without the baselines: import the file,
build Model(*get_init_inputs()) on the GPU, make one trial's inputs, run the reference once, and
derive the signature a candidate sees (forward's tensors and scalars, the random numbers forward
draws, the state_dict, the outputs). Prints one line per problem that cannot be expressed, with the
reason, one line per problem whose forward draws random numbers (they become inputs:
tools/kagent_ref/draws.py), with what it draws, one per problem with tensors forward never reads
(tools/kagent_ref/reads.py), then the counts.

--stats FILE writes one JSON line per problem with each floating output's figures over its finite
elements (count, min, max, largest and smallest |value|, sum and sum of squares, in float64), and
with --fp64 those of its fp64 twin (sum, sum of squares, and the squared error of the reference
against it): what the whole-output rules need to judge a constant or an all-zero output against
that reference (benchmarks/trivial_outputs.cpp reads the file).

Usage: load_all_problems.py [--kernelbench DIR] [--gpu N] [--levels level1,level2,level3] [--stats FILE [--fp64]]
"""
import argparse
import gc
import json
import glob
import os
import re
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tools"))

import torch  # noqa: E402

from kagent_ref.problem import Problem  # noqa: E402


def natural(path):
    return [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", path)]


DTYPES = {torch.float32: "f32", torch.float16: "f16", torch.bfloat16: "bf16", torch.float64: "f64"}


def output_stats(p, outs, twins=None):
    """Each floating output's figures over its finite elements, in float64; with `twins` ({name:
    fp64 tensor}), the twin's over the elements finite in both."""
    rows = []
    for name, o in zip(p.output_names(outs), outs):
        if not isinstance(o, torch.Tensor) or o.dtype not in DTYPES:
            continue
        x = o.detach().double().flatten()
        x = x[torch.isfinite(x)]
        row = {"tensor": name, "dtype": DTYPES[o.dtype], "numel": o.numel(), "finite": x.numel()}
        if x.numel():
            a = x.abs()
            row.update({"min": x.min().item(), "max": x.max().item(), "max_abs": a.max().item(),
                        "min_abs": a.min().item(), "sum": x.sum().item(), "sum_sq": (x * x).sum().item()})
        t = (twins or {}).get(name)
        if t is not None and t.shape == o.shape:
            r, r64 = o.detach().double().flatten(), t.double().flatten()
            both = torch.isfinite(r) & torch.isfinite(r64)
            r, r64 = r[both], r64[both]
            row.update({"sum64": r64.sum().item(), "sum_sq64": (r64 * r64).sum().item(),
                        "sq_referr64": ((r - r64) ** 2).sum().item()})
        rows.append(row)
    return rows


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kernelbench", default=os.environ.get("KAGENT_KERNELBENCH_DIR", "../shared/kernelbench"))
    ap.add_argument("--gpu", type=int, default=0)
    ap.add_argument("--levels", default="level1,level2,level3")
    ap.add_argument("--stats", help="write each problem's output figures here (JSON lines)")
    ap.add_argument("--fp64", action="store_true", help="with --stats: also run each reference in float64")
    args = ap.parse_args()
    files = []
    for level in args.levels.split(","):
        files += sorted(glob.glob(os.path.join(args.kernelbench, level, "*.py")), key=natural)
    if not files:
        print(f"no problem files under {args.kernelbench}", file=sys.stderr)
        return 2
    ok, failed, drawing, unread_by, t0 = 0, [], [], [], time.monotonic()
    stats = open(args.stats, "w") if args.stats else None
    for path in files:
        name = os.path.relpath(path, args.kernelbench)
        p = outs = inputs = None
        try:
            p = Problem(path, "fp32", 0, args.gpu)
            inputs, outs = p.trial(1)
            sig = p.signature(inputs, outs)
            ok += 1
            if stats:
                twins = None
                if args.fp64:
                    from kagent_ref.reference64 import SUFFIX
                    named64, _ = p.fp64_outputs(inputs, outs)
                    twins = {n[:-len(SUFFIX)]: t for n, t in named64 or []}
                stats.write(json.dumps({"problem": name, "outputs": output_stats(p, outs, twins)}) + "\n")
                stats.flush()
                del twins
            unread = [t["name"] for t in sig["inputs"] + sig["params"] if t.get("unread")]
            if unread:
                unread_by.append(name)
                print(f"{name}: forward never reads {', '.join(unread)}", flush=True)
            if sig["draws"]:
                drawing.append(name)
                print(f"{name}: draws " + "; ".join(f"{d['name']} {d['shape']}: {d['meaning']}" for d in sig["draws"]),
                      flush=True)
        except Exception as e:  # the reason is the result
            failed.append((name, f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"))
            print(f"{name}: {failed[-1][1]}", flush=True)
        del p, outs, inputs
        gc.collect()
        torch.cuda.empty_cache()
    print(f"{ok}/{len(files)} problems load (signature and one reference run) in {time.monotonic() - t0:.0f} s "
          f"on {torch.cuda.get_device_name(args.gpu)}, torch {torch.__version__}")
    print(f"{len(drawing)} problems draw random numbers in forward, given to candidates as inputs"
          + (f": {', '.join(drawing)}" if drawing else ""))
    print(f"{len(unread_by)} problems have inputs or parameters forward never reads"
          + (f": {', '.join(unread_by)}" if unread_by else ""))
    return 0 if not failed else 1


if __name__ == "__main__":
    sys.exit(main())
