#!/usr/bin/env python3
"""fixture_tiers: every solution in examples/kernelbench evaluated with timing (`kagent eval --json`)
against its KernelBench problem: correctness, candidate median, torch eager and torch.compile
medians (measured by the reference server, or read from its cache), speedups and the tier.

Usage: fixture_tiers.py [--kagent build/kagent] [--kernelbench DIR]   (DIR holds level1/, level2/)
"""
import argparse
import glob
import json
import os
import subprocess
import sys


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kagent", default="build/kagent")
    ap.add_argument("--kernelbench", default=os.environ.get("KAGENT_KERNELBENCH_DIR", "../shared/kernelbench"))
    args = ap.parse_args()
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    rows = []
    for cand in sorted(glob.glob(os.path.join(here, "examples/kernelbench/level*/*.cu"))):
        level = os.path.basename(os.path.dirname(cand))
        problem = os.path.join(args.kernelbench, level, os.path.basename(cand)[:-3] + ".py")
        r = subprocess.run([args.kagent, "eval", cand, "--op", problem, "--json", "--timeout", "300"],
                           capture_output=True, text=True)
        name = f"{level}/{os.path.basename(cand)[:-3]}"
        try:
            j = json.loads(r.stdout)
        except json.JSONDecodeError:
            print(f"{name}: kagent eval exited {r.returncode}: {r.stderr.strip()[-400:]}", file=sys.stderr)
            continue
        o = j.get("outcome", {})
        ct = (o.get("candidate_time") or {}).get("median_ms")
        b = j.get("baselines", {})
        rows.append((name, o.get("correct"), ct, b.get("eager_ms"), b.get("compile_ms"), j.get("speedup_vs_eager"),
                     j.get("speedup_vs_compile"), j.get("tier")))
    fmt = "{:45} {:>7} {:>10} {:>10} {:>10} {:>8} {:>8} {:>4}"
    print(fmt.format("fixture", "correct", "cand ms", "eager ms", "compile ms", "x eager", "x comp", "tier"))
    f = lambda v, d=4: "-" if v is None else f"{v:.{d}f}"
    for n, ok, c, e, cp, se, sc, t in rows:
        print(fmt.format(n, str(ok), f(c), f(e), f(cp), f(se, 3), f(sc, 3), t))


if __name__ == "__main__":
    main()
