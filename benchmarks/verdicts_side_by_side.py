#!/usr/bin/env python3
"""The verdicts of two kagent builds on the same candidates, side by side.

Each candidate is evaluated by `kagent eval --json` with the "before" build, then with the "after"
build (the same GPU, in alternation), and one row per candidate prints both tiers, the failure
stage and whether they agree. Plan candidates (honest, wrong, faulting, hanging, racing, out of
bounds), PyTorch problems and ModelNew solutions (Triton; cheating ones) are covered. Exit 1 when a
verdict differs.

Usage: verdicts_side_by_side.py --before OLD/kagent --after NEW/kagent --kernelbench DIR
"""

import argparse
import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def cases(kb):
    add = "examples/vector_add/op.json"
    k = "tests/gpu/kernels/"
    m = "tests/gpu/modelnew/"
    relu = os.path.join(kb, "level1/19_ReLU.py")
    out = [(c, add) for c in ["examples/vector_add/cand_naive.cu", "examples/vector_add/cand_vec4.cu",
                              k + "wrong.cu", k + "half_output.cu", k + "illegal_address.cu", k + "trap.cu",
                              k + "race.cu", k + "one_past_end.cu", k + "scratch_past_end.cu",
                              k + "wrong_after_warmup.cu", k + "endless_loop.cu", k + "exact_writes.cu"]]
    out.append(("examples/softmax/cand_online.cu", "examples/softmax/op.json"))
    for name in ["19_ReLU", "23_Softmax", "1_Square_matrix_multiplication_"]:
        out.append((f"examples/kernelbench/level1/{name}.cu", os.path.join(kb, f"level1/{name}.py")))
    out.append(("examples/kernelbench_library/level3/1_MLP.cu", os.path.join(kb, "level3/1_MLP.py")))
    for f in ["relu_triton.py", "cached_output.py", "result_reuse.py", "writes_input.py"]:
        out.append((m + f, relu))
    return out


def verdict(kagent, cand, op, timeout):
    t0 = time.monotonic()
    try:
        p = subprocess.run([kagent, "eval", cand, "--op", op, "--json", "--precision", "fp32", "--timeout", "30"],
                           cwd=ROOT, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"exit": "timeout", "tier": None, "stage": "", "s": time.monotonic() - t0}
    rec = {}
    for line in p.stdout.splitlines():  # the record: the last line that is a JSON object
        try:
            obj = json.loads(line)
        except ValueError:
            continue
        if isinstance(obj, dict):
            rec = obj
    o = rec.get("outcome") or {}
    compiled = (rec.get("compile") or {}).get("ok", True)
    stage = "compile" if compiled is False else o.get("failure_stage", "")
    return {"exit": p.returncode, "tier": rec.get("tier"), "stage": stage or "", "s": time.monotonic() - t0,
            "err": p.stderr.strip().splitlines()[-1] if p.returncode not in (0, 1) and p.stderr.strip() else ""}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--before", required=True)
    ap.add_argument("--after", required=True)
    ap.add_argument("--kernelbench", required=True)
    ap.add_argument("--timeout", type=float, default=240)
    a = ap.parse_args()
    print(f"{'candidate':58} {'op':28} {'before':>16} {'after':>16}  same")
    differ = 0
    for cand, op in cases(a.kernelbench):
        if not os.path.exists(os.path.join(ROOT, cand)) or not os.path.exists(op if os.path.isabs(op) else
                                                                             os.path.join(ROOT, op)):
            print(f"{cand:58} missing")
            continue
        b = verdict(a.before, cand, op, a.timeout)
        n = verdict(a.after, cand, op, a.timeout)
        same = (b["exit"], b["tier"], b["stage"]) == (n["exit"], n["tier"], n["stage"])
        differ += not same
        fmt = lambda v: f"{v['tier']}/{v['stage'] or '-'}/x{v['exit']}"
        print(f"{cand:58} {os.path.basename(op):28} {fmt(b):>16} {fmt(n):>16}  {'yes' if same else 'NO'}"
              f"  ({b['s']:.1f} s / {n['s']:.1f} s){' ' + b['err'] + ' | ' + n['err'] if not same else ''}",
              flush=True)
    print(f"{differ} verdict(s) differ")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
