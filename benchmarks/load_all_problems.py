#!/usr/bin/env python3
"""load_all_problems: can kagent express every KernelBench problem? For each problem file of the
level folders, what the reference server does on `load` without the baselines: import the file,
build Model(*get_init_inputs()) on the GPU, make one trial's inputs, run the reference once, and
derive the signature a candidate sees (forward's tensors and scalars, the random numbers forward
draws, the state_dict, the outputs). Prints one line per problem that cannot be expressed, with the
reason, one line per problem whose forward draws random numbers (they become inputs:
tools/kagent_ref/draws.py), with what it draws, then the counts.

Usage: load_all_problems.py [--kernelbench DIR] [--gpu N] [--levels level1,level2,level3]
"""
import argparse
import gc
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


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kernelbench", default=os.environ.get("KAGENT_KERNELBENCH_DIR", "../shared/kernelbench"))
    ap.add_argument("--gpu", type=int, default=0)
    ap.add_argument("--levels", default="level1,level2,level3")
    args = ap.parse_args()
    files = []
    for level in args.levels.split(","):
        files += sorted(glob.glob(os.path.join(args.kernelbench, level, "*.py")), key=natural)
    if not files:
        print(f"no problem files under {args.kernelbench}", file=sys.stderr)
        return 2
    ok, failed, drawing, t0 = 0, [], [], time.monotonic()
    for path in files:
        name = os.path.relpath(path, args.kernelbench)
        p = outs = inputs = None
        try:
            p = Problem(path, "fp32", 0, args.gpu)
            inputs, outs = p.trial(1)
            sig = p.signature(inputs, outs)
            ok += 1
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
    return 0 if not failed else 1


if __name__ == "__main__":
    sys.exit(main())
