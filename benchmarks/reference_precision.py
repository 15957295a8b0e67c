#!/usr/bin/env python3
"""How far PyTorch's references are from the truth, per KernelBench problem (issue #15): each
problem's reference run in fp32 with TF32 off (kagent's `fp32`), with TF32 on (kagent's `tf32`, and
PyTorch's default for convolutions), and in float64 (the module and inputs cast), on the same
weights and inputs. Per problem and output it prints the max abs and max rel error of fp32 and tf32
against fp64, the share of elements outside kagent's fp32 tolerance (|d| > 1e-4 + 1e-4 |r64|), and
the tolerance each would need (the smallest t with |d| <= t + t |r64| everywhere); then the
distribution over problems (median, p90, p99, max) and a proposed default tolerance for `tf32`
(the largest need among the problems whose fp32 reference is within 1e-4 of fp64, with a margin of
1.5, rounded up to 1, 2 or 5 times a power of ten).

Needs a GPU and torch. Problems come from $KAGENT_KERNELBENCH_DIR (or --kernelbench), every
level*/ folder. Records go to --out as JSON lines, one per problem, and --resume skips the ones
there, so a long sweep can run in several calls of a limited length (--budget-s).

  python3 benchmarks/reference_precision.py --out reference_precision.jsonl --resume --budget-s 540
  python3 benchmarks/reference_precision.py --summary reference_precision.jsonl   # the tables again
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

ATOL = RTOL = 1e-4  # kagent's fp32 tolerance
MARGIN = 1.5  # over the largest TF32 need: a TF32 candidate rounds differently from the TF32 reference
CHUNK = 1 << 25


def compare(r, r64):
    """Errors of r against r64, in chunks (outputs can be several GB)."""
    import torch

    a, b = r.reshape(-1), r64.reshape(-1)
    max_abs = max_rel = need = 0.0
    outside = finite = 0
    for s in range(0, a.numel(), CHUNK):
        x, y = a[s:s + CHUNK].double(), b[s:s + CHUNK]
        ok = torch.isfinite(x) & torch.isfinite(y)
        x, y = x[ok], y[ok]
        finite += x.numel()
        if x.numel() == 0:
            continue
        d = (x - y).abs()
        ay = y.abs()
        max_abs = max(max_abs, d.max().item())
        nz = ay > 0
        if nz.any():
            max_rel = max(max_rel, (d[nz] / ay[nz]).max().item())
        need = max(need, (d / (1 + ay)).max().item())
        outside += int((d > ATOL + RTOL * ay).sum().item())
    return {"max_abs": max_abs, "max_rel": max_rel, "need": need, "outside_1e-4": outside / finite if finite else 0.0,
            "numel": a.numel(), "finite": finite}


def run_variant(module, model, device, dtype, seed):
    """Outputs of `model` on get_inputs() made under `seed` (cast to dtype), with the RNG reset before
    the forward so that models drawing random numbers draw the same ones in every variant."""
    import torch

    torch.manual_seed(seed)
    with device:
        raw = module.get_inputs()
    args = [x.to(device).to(dtype) if isinstance(x, torch.Tensor) and x.is_floating_point()
            else (x.to(device) if isinstance(x, torch.Tensor) else x) for x in raw]
    torch.manual_seed(seed + 1)
    with torch.no_grad():
        out = model(*args)
    del args
    outs = list(out) if isinstance(out, (tuple, list)) else [out]
    torch.cuda.synchronize()
    return outs


def measure(path, seed):
    import torch

    from kagent_ref import numerics
    from kagent_ref.problem import load_module

    device = torch.device("cuda", 0)
    module = load_module(path)
    torch.manual_seed(seed)
    with device:
        model = module.Model(*module.get_init_inputs()).to(device)
    model = model.to(torch.float32)  # KernelBench's model as kagent loads it at fp32 (no .eval())
    rec = {"problem": os.path.relpath(path, os.environ.get("KAGENT_KERNELBENCH_DIR", os.path.dirname(path)))}
    numerics.apply(torch, numerics.numerics("fp32"))
    out32 = run_variant(module, model, device, torch.float32, seed)
    numerics.apply(torch, numerics.numerics("tf32"))
    outtf = run_variant(module, model, device, torch.float32, seed)
    numerics.apply(torch, numerics.numerics("fp32"))
    try:
        model64 = copy.deepcopy(model).to(torch.float64)
        out64 = run_variant(module, model64, device, torch.float64, seed)
        del model64
    except Exception as e:  # an op without fp64 support, or out of memory
        rec["fp64_error"] = f"{type(e).__name__}: {str(e).strip().splitlines()[0] if str(e).strip() else ''}"
        torch.cuda.empty_cache()
        return rec
    rec["outputs"] = []
    for i, (a, b, c) in enumerate(zip(out32, outtf, out64)):
        if not a.is_floating_point():
            continue
        rec["outputs"].append({"index": i, "fp32": compare(a, c), "tf32": compare(b, c)})
    del out32, outtf, out64
    torch.cuda.empty_cache()
    return rec


def worst(rec, side, key):
    vals = [o[side][key] for o in rec.get("outputs", [])]
    return max(vals) if vals else None


def percentile(v, q):
    v = sorted(v)
    if not v:
        return float("nan")
    pos = q * (len(v) - 1)
    lo = math.floor(pos)
    hi = min(lo + 1, len(v) - 1)
    return v[lo] + (v[hi] - v[lo]) * (pos - lo)


def round_up_125(x):
    """The smallest of 1, 2, 5 times a power of ten that is >= x."""
    if x <= 0:
        return 0.0
    e = math.floor(math.log10(x))
    for m in (1, 2, 5, 10):
        if m * 10 ** e >= x * (1 - 1e-12):
            return m * 10 ** e
    return 10 ** (e + 1)


def line(rec):
    if "error" in rec or "fp64_error" in rec:
        return f"{rec['problem']:<70} skipped: {rec.get('error') or rec.get('fp64_error')}"
    f = lambda side, k: worst(rec, side, k)  # noqa: E731
    if f("fp32", "max_abs") is None:
        return f"{rec['problem']:<70} no floating outputs"
    return (f"{rec['problem']:<70} fp32 abs {f('fp32', 'max_abs'):9.2e} rel {f('fp32', 'max_rel'):9.2e} "
            f">1e-4 {100 * f('fp32', 'outside_1e-4'):6.2f}% need {f('fp32', 'need'):9.2e} | "
            f"tf32 abs {f('tf32', 'max_abs'):9.2e} rel {f('tf32', 'max_rel'):9.2e} "
            f">1e-4 {100 * f('tf32', 'outside_1e-4'):6.2f}% need {f('tf32', 'need'):9.2e}")


def summary(records):
    ok = [r for r in records if r.get("outputs")]
    print(f"\n{len(records)} problems, {len(ok)} measured "
          f"({sum('fp64_error' in r for r in records)} without fp64, {sum('error' in r for r in records)} failed)")
    print(f"{'':<26} {'median':>10} {'p90':>10} {'p99':>10} {'max':>10}")
    for side in ("fp32", "tf32"):
        for key, label in (("max_abs", "max abs vs fp64"), ("max_rel", "max rel vs fp64"),
                           ("outside_1e-4", "share outside 1e-4"), ("need", "tolerance needed")):
            v = [worst(r, side, key) for r in ok]
            print(f"{side + ' ' + label:<26} " + " ".join(f"{percentile(v, q):10.3g}" for q in (0.5, 0.9, 0.99, 1.0)))
    # The tf32 default is sized on the well-conditioned problems: those whose fp32 reference is
    # within fp32's own tolerance of fp64. Where even IEEE fp32 is farther than that (overflowing
    # recurrences, dropout's random mask, long reductions of cancelling terms), no tolerance of a
    # TF32-sized order separates right from wrong; the compare rule's fp64 clause judges those.
    ill = sorted(((worst(r, "fp32", "need"), r["problem"]) for r in ok if worst(r, "fp32", "need") > ATOL),
                 reverse=True)
    if ill:
        print(f"{len(ill)} ill-conditioned (fp32 reference itself beyond {ATOL:g} of fp64; left out of the "
              "proposal): " + ", ".join(f"{p} {n:.3g}" for n, p in ill))
    well = [r for r in ok if worst(r, "fp32", "need") <= ATOL]
    if well:
        top = sorted(((worst(r, "tf32", "need"), r["problem"]) for r in well), reverse=True)[:5]
        need = top[0][0]
        print("largest tf32 needs of the rest: " + ", ".join(f"{p} {n:.3g}" for n, p in top))
        print(f"proposed tf32 tolerance: atol = rtol = {round_up_125(MARGIN * need):g} "
              f"({MARGIN:g} x the largest need {need:.3g}, rounded up to 1-2-5)")

def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kernelbench", default=os.environ.get("KAGENT_KERNELBENCH_DIR", "../shared/kernelbench"))
    ap.add_argument("--filter", default="", help="only problems whose level/name matches this regex")
    ap.add_argument("--out", default="reference_precision.jsonl")
    ap.add_argument("--resume", action="store_true", help="skip the problems already in --out")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--budget-s", type=float, default=0, help="stop starting problems after this many seconds")
    ap.add_argument("--summary", metavar="JSONL", help="print the tables of an earlier run and exit")
    a = ap.parse_args()
    if a.summary:
        records = [json.loads(x) for x in open(a.summary) if x.strip()]
        for r in records:
            print(line(r))
        summary(records)
        return 0
    os.environ["KAGENT_KERNELBENCH_DIR"] = os.path.abspath(a.kernelbench)
    paths = sorted(glob.glob(os.path.join(a.kernelbench, "level*", "*.py")))
    paths = [p for p in paths if re.search(a.filter, os.path.relpath(p, a.kernelbench))]
    done = {}
    if a.resume and os.path.exists(a.out):
        for x in open(a.out):
            if x.strip():
                r = json.loads(x)
                done[r["problem"]] = r
    # A problem started but never recorded was killed (a time limit, a crash of the process): record
    # that instead of running it again and again.
    started = a.out + ".started"
    killed = open(started).read().strip() if os.path.exists(started) else ""
    t0 = time.monotonic()
    records = list(done.values())
    with open(a.out, "a") as out:
        if killed and killed not in done:
            rec = {"problem": killed, "error": "did not finish in an earlier call (killed at its time limit?)"}
            out.write(json.dumps(rec) + "\n")
            done[killed] = rec
            records.append(rec)
        for p in paths:
            rel = os.path.relpath(p, a.kernelbench)
            if rel in done:
                continue
            with open(started, "w") as f:
                f.write(rel)
            if a.budget_s and time.monotonic() - t0 > a.budget_s:
                print(f"budget of {a.budget_s:g} s spent: {len(paths) - len(records)} problems left (--resume)")
                break
            try:
                rec = measure(p, a.seed)
            except Exception as e:  # a problem that does not build or run (or does not fit) is recorded
                import torch

                torch.cuda.empty_cache()
                rec = {"problem": rel, "error": f"{type(e).__name__}: {str(e).strip().splitlines()[0][:200] if str(e).strip() else ''}"}
            rec["problem"] = rel
            out.write(json.dumps(rec) + "\n")
            out.flush()
            os.remove(started)
            records.append(rec)
            print(line(rec), flush=True)
    summary(records)
    return 0


if __name__ == "__main__":
    sys.exit(main())
