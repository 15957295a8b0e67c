#!/usr/bin/env python3
"""The margins of kagent's precision rule (include/kagent/protocol/output_rules.hpp), per KernelBench
problem: each problem loaded as the reference server loads it at fp32, one trial, its fp64 twins, and
the relative L2 errors against fp64 (||x - r64|| / ||r64||) of

  ref     the fp32 reference (TF32 off): the rule's anchor;
  cpu     the same model and inputs run in fp32 on the CPU: an honest fp32 implementation with other
          summation orders and other library kernels, the stand-in for a candidate's own kernels;
  r64     the fp64 twin rounded to fp32: the best an fp32 output can be;
  tf32, bf16, fp16: the reference at each forbidden precision (tools/kagent_ref/lower_precision.py,
          the server's own figures).

The rule (mirrored here from output_rules.cpp): the anchor is max(ref, 2^-24); a forbidden precision
counts when its error is at least 8x the anchor; the limit is the smallest geometric mean of the
anchor and a counted precision's error. An honest output passes when its error is under the limit
(the `cpu margin` column: limit / cpu error, above 1 passes); a candidate at a forbidden precision
fails when its error is over the limit (the `p margin` columns: p's error / limit, above 1 fails for a
candidate as accurate as PyTorch at p).

Needs a GPU and torch. Problems from $KAGENT_KERNELBENCH_DIR (--kernelbench), every level*/ folder,
or those matching --filter. One JSON line per problem in --out; --resume skips those there, so a
sweep runs in several calls of --budget-s seconds. The CPU forward is left out where the fp32 GPU
forward takes longer than --cpu-max-ms (the CPU would take minutes).

  python3 benchmarks/precision_margins.py --out precision_margins.jsonl --resume --budget-s 500
  python3 benchmarks/precision_margins.py --summary precision_margins.jsonl
"""

import argparse
import copy
import glob
import json
import math
import os
import re
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))

DISTINCT = 8.0  # output_rules.hpp, kPrecisionDistinct
FLOOR = 2.0 ** -24  # output_rules.cpp, precision_floor(f32)
# output_rules.cpp, storage_error: an output computed exactly and only stored at the precision.
STORAGE = {"tf32": 0.375 * 2.0 ** -11, "fp16": 0.375 * 2.0 ** -11, "bf16": 0.375 * 2.0 ** -8}


def rule(ref, lower):
    """(limit, nearest precision) of output_rules.cpp's judge_precision, or (None, None)."""
    anchor = max(ref, FLOOR)
    best = (None, None)
    for p, e in lower.items():
        if e is None or not math.isfinite(e) or e < DISTINCT * anchor:
            continue
        e = min(e, max(STORAGE.get(p, math.inf), DISTINCT * anchor))
        limit = math.sqrt(anchor * e)
        if best[0] is None or limit < best[0]:
            best = (limit, p)
    return best


def measure(path, seed, cpu_max_ms):
    import torch

    from kagent_ref import lower_precision
    from kagent_ref.problem import Problem
    from kagent_ref.reference64 import SUFFIX

    rec = {"problem": os.path.relpath(path, os.environ["KAGENT_KERNELBENCH_DIR"])}
    p = Problem(path, "fp32", seed, 0)
    args, outs = p.trial(seed)
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    p.run(args)
    torch.cuda.synchronize()
    gpu_ms = (time.perf_counter() - t0) * 1e3
    named64, note = p.fp64_outputs(args, outs)
    if not named64:
        rec["skipped"] = note or "no floating outputs"
        return rec
    figs = lower_precision.measure(torch, p, args, outs, named64)
    twins = {n[:-len(SUFFIX)]: t for n, t in named64}
    names = p.output_names(outs)
    cpu = None
    if gpu_ms <= cpu_max_ms:
        try:
            model = copy.deepcopy(p.model).cpu()
            cargs = [a.cpu() if isinstance(a, torch.Tensor) else a for a in args]
            cpu = lower_precision.call_with_draws(torch, p, model, cargs)
        except Exception as e:  # an op without a CPU kernel
            rec["cpu_error"] = f"{type(e).__name__}: {str(e).strip().splitlines()[0] if str(e).strip() else ''}"
    else:
        rec["cpu_error"] = f"GPU forward {gpu_ms:.0f} ms, over --cpu-max-ms"
    rec["outputs"] = []
    for i, (name, o) in enumerate(zip(names, outs)):
        if name not in twins:
            continue
        t = twins[name]
        f = next(x for x in figs["outputs"] if x["tensor"] == name)
        row = {"tensor": name, "numel": o.numel(), "scale": float(t.abs().max()),
               "ref": lower_precision.errors(torch, o, t)[0],
               "r64": lower_precision.errors(torch, t.float(), t)[0],
               "cpu": lower_precision.errors(torch, cpu[i].to(t.device), t)[0] if cpu else None,
               "lower": {x["precision"]: x["rel_l2"] for x in f["lower"]}}
        if f.get("note"):
            row["note"] = f["note"]
        rec["outputs"].append(row)
    del p, args, outs, named64, cpu
    torch.cuda.empty_cache()
    return rec


def margins(o):
    """(limit, nearest, cpu margin, {p: margin})."""
    if o["ref"] is None:
        return None, None, None, {}
    limit, nearest = rule(o["ref"], o["lower"])
    if limit is None:
        return None, None, None, {}
    cpu = limit / o["cpu"] if o.get("cpu") else None
    return limit, nearest, cpu, {p: (e / limit if e else None) for p, e in o["lower"].items()}


def fmt(v, w=9, spec=".2e"):
    return f"{'-':>{w}}" if v is None else f"{v:{w}{spec}}"


def line(rec):
    if "outputs" not in rec:
        return [f"{rec['problem']:<60} skipped: {rec.get('skipped') or rec.get('error')}"]
    out = []
    for o in rec["outputs"]:
        limit, nearest, cpu_m, pm = margins(o)
        out.append(f"{rec['problem'][:52] + ':' + o['tensor'][:7]:<60} ref {fmt(o['ref'])} cpu {fmt(o.get('cpu'))} "
                   f"tf32 {fmt(o['lower'].get('tf32'))} bf16 {fmt(o['lower'].get('bf16'))} "
                   f"fp16 {fmt(o['lower'].get('fp16'))} | limit {fmt(limit)} ({nearest or '-':>4}) "
                   f"cpu x{fmt(cpu_m, 7, '.1f')} tf32 x{fmt(pm.get('tf32'), 7, '.1f')} "
                   f"bf16 x{fmt(pm.get('bf16'), 7, '.1f')} fp16 x{fmt(pm.get('fp16'), 7, '.1f')}")
    return out


def percentile(v, q):
    v = sorted(v)
    if not v:
        return float("nan")
    pos = q * (len(v) - 1)
    lo = math.floor(pos)
    hi = min(lo + 1, len(v) - 1)
    return v[lo] + (v[hi] - v[lo]) * (pos - lo)


def summary(records):
    rows = [o for r in records for o in r.get("outputs", [])]
    judged = [(o, margins(o)) for o in rows]
    judged = [(o, m) for o, m in judged if m[0] is not None]
    print(f"\n{len(records)} problems, {len(rows)} outputs with fp64 twins, {len(judged)} judged by the rule")
    cpu = [m[2] for _, m in judged if m[2] is not None]
    print(f"{'margin (over 1 is right)':<34} {'n':>5} {'min':>9} {'p1':>9} {'p10':>9} {'median':>9}")
    print(f"{'honest fp32 on CPU: limit / error':<34} {len(cpu):5d} " +
          " ".join(f"{percentile(cpu, q):9.2f}" for q in (0, 0.01, 0.1, 0.5)))
    for p in ("tf32", "bf16", "fp16"):
        v = [m[3][p] for o, m in judged if m[3].get(p) is not None and DISTINCT * max(o["ref"], FLOOR) <= o["lower"][p]]
        print(f"{p + ' reference: error / limit':<34} {len(v):5d} " +
              " ".join(f"{percentile(v, q):9.2f}" for q in (0, 0.01, 0.1, 0.5)))
    worst = sorted((m[2], r["problem"], o["tensor"]) for r in records for o in r.get("outputs", [])
                   for m in [margins(o)] if m[2] is not None)[:8]
    print("honest fp32 nearest the limit: " + ", ".join(f"{p}:{t} x{c:.1f}" for c, p, t in worst))
    failed_cpu = [(r["problem"], o["tensor"], m[2]) for r in records for o in r.get("outputs", [])
                  for m in [margins(o)] if m[2] is not None and m[2] <= 1]
    print(f"honest fp32 outputs the rule fails: {len(failed_cpu)}" +
          (": " + ", ".join(f"{p}:{t} x{c:.2f}" for p, t, c in failed_cpu) if failed_cpu else ""))
    passed = {p: [(r["problem"], o["tensor"], m[3][p]) for r in records for o in r.get("outputs", [])
                  for m in [margins(o)] if m[3].get(p) is not None and m[3][p] <= 1
                  and DISTINCT * max(o["ref"], FLOOR) <= o["lower"][p]] for p in ("tf32", "bf16", "fp16")}
    for p, v in passed.items():
        print(f"{p} references the rule passes (of those it tells apart): {len(v)}" +
              (": " + ", ".join(f"{a}:{t} x{c:.2f}" for a, t, c in v[:12]) if v else ""))
    none = [(r["problem"], o["tensor"]) for r in records for o in r.get("outputs", []) if margins(o)[0] is None]
    print(f"outputs no forbidden precision tells apart (not judged): {len(none)}" +
          (": " + ", ".join(f"{a}:{t}" for a, t in none[:20]) if none else ""))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kernelbench", default=os.environ.get("KAGENT_KERNELBENCH_DIR", "../shared/kernelbench"))
    ap.add_argument("--filter", default="", help="only problems whose level/name matches this regex")
    ap.add_argument("--out", default="precision_margins.jsonl")
    ap.add_argument("--resume", action="store_true", help="skip the problems already in --out")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--cpu-max-ms", type=float, default=40.0)
    ap.add_argument("--budget-s", type=float, default=0, help="stop starting problems after this many seconds")
    ap.add_argument("--summary", metavar="JSONL", help="print the tables of an earlier run and exit")
    a = ap.parse_args()
    if a.summary:
        records = [json.loads(x) for x in open(a.summary) if x.strip()]
        for r in records:
            print("\n".join(line(r)))
        summary(records)
        return 0
    os.environ["KAGENT_KERNELBENCH_DIR"] = os.path.abspath(a.kernelbench)
    paths = sorted(glob.glob(os.path.join(a.kernelbench, "level*", "*.py")))
    paths = [p for p in paths if re.search(a.filter, os.path.relpath(p, a.kernelbench))]
    done = set()
    if a.resume and os.path.exists(a.out):
        done = {json.loads(x)["problem"] for x in open(a.out) if x.strip()}
    t0 = time.time()
    with open(a.out, "a") as out:
        for path in paths:
            rel = os.path.relpath(path, a.kernelbench)
            if rel in done:
                continue
            if a.budget_s and time.time() - t0 > a.budget_s:
                print(f"budget reached: {len(paths) - len(done)} problems left", flush=True)
                break
            try:
                rec = measure(path, a.seed, a.cpu_max_ms)
            except Exception as e:
                import torch

                torch.cuda.empty_cache()
                rec = {"problem": rel, "error": f"{type(e).__name__}: {str(e).strip().splitlines()[0][:200] if str(e).strip() else ''}"}
            out.write(json.dumps(rec) + "\n")
            out.flush()
            done.add(rel)
            print("\n".join(line(rec)), flush=True)
    records = [json.loads(x) for x in open(a.out) if x.strip()]
    summary(records)
    return 0


if __name__ == "__main__":
    sys.exit(main())
