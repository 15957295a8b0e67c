#!/usr/bin/env python3
"""The training preset against the default protocol, candidate by candidate, in one run on one GPU.

Candidates: honest vector_add plans of differing speed (generated_candidates.py: scalar, float2
and float4 accesses, three block sizes, FMA chains that make them 2x faster to 3x slower than the
reference, which carries a chain of its own so that no candidate sits on the tier boundary), and
every failing kind of tests/gpu/kernels that fits the op (wrong results, faults, out-of-bounds
writes, races, a hang, a compile error). All are judged by `kagent eval A B C ... --json` twice,
with the default protocol and with `--preset training`, each run in a fresh compile cache; the
script prints per candidate the two tiers and the two medians, and a summary: tiers equal on how
many, the largest |median ratio - 1| among correct candidates, how many within 1%, and each run's
wall time per candidate.

    python3 benchmarks/preset_agreement.py --kagent build/kagent [--out preset.json] [--repeat-default]
        [--kernelbench DIR --relu-n N]

--relu-n adds N ReLU plans of differing shapes (float4 or scalar, four block sizes) against KernelBench's
level1/19_ReLU (6.4 GB, about 4 ms a run): an operator of milliseconds, where the training preset's
floor of 10 samples, not its 20 ms of GPU time, ends the sampling.

--repeat-default adds a second default run, so that the default protocol's own run-to-run spread
is printed beside the preset's difference. Needs a GPU; standard library only.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import generated_candidates as gen  # noqa: E402

KERNELS = os.path.join(ROOT, "tests", "gpu", "kernels")
VECTOR_ADD = os.path.join(ROOT, "examples", "vector_add")
REFERENCE_CHAIN = 256  # the reference's FMAs per element: compute-bound, about twice the copy time
FASTER = (0, 64, 128)  # chains well under the reference's: faster than it
SLOWER = (384, 512, 768)  # well over: slower


def failing_kinds():
    names = ["wrong", "half_output", "zero_inputs", "illegal_address", "trap", "race", "wrong_after_warmup",
             "one_past_end", "past_end_after_warmup", "far_past_end", "one_before_start", "endless_loop",
             "elementwise_skips_last", "exact_writes", "printf_add", "fma_chain"]
    out = [os.path.join(KERNELS, n + ".cu") for n in names if os.path.exists(os.path.join(KERNELS, n + ".cu"))]
    out.append(os.path.join(VECTOR_ADD, "cand_compile_error.cu"))
    return out


def run(kagent, op, files, preset, timeout_s, cache):
    env = dict(os.environ, KAGENT_CACHE_DIR=cache)
    cmd = [kagent, "eval", *files, "--op", op, "--json", "--timeout", str(timeout_s)]
    if preset != "default":
        cmd += ["--preset", preset]
    t0 = time.monotonic()
    p = subprocess.run(cmd, capture_output=True, text=True, env=env)
    wall = time.monotonic() - t0
    records = {}
    for line in p.stdout.splitlines():
        line = line.strip()
        if line.startswith("{"):
            r = json.loads(line)
            records[r.get("candidate", "")] = r
    if not records:
        sys.exit(f"kagent eval printed no records (exit {p.returncode}):\n{p.stderr[-3000:]}")
    return records, wall, p.stderr


def summary_of(r):
    if "error" in r:
        return {"tier": None, "median_ms": None, "refused": r["error"]}
    o = r.get("outcome", {})
    t = o.get("candidate_time") or {}
    return {"tier": r.get("tier"), "median_ms": t.get("median_ms"), "n": t.get("n"),
            "stage": o.get("failure_stage", "-") if not o.get("correct") else "-"}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kagent", required=True)
    ap.add_argument("--out")
    ap.add_argument("--timeout", type=float, default=10.0, help="each candidate's GPU limit, s (the hang's cost)")
    ap.add_argument("--repeat-default", action="store_true")
    ap.add_argument("--kernelbench", default=os.environ.get("KAGENT_KERNELBENCH_DIR", ""))
    ap.add_argument("--relu-n", type=int, default=0)
    a = ap.parse_args()

    work = tempfile.mkdtemp(prefix="kagent-preset-")
    op = gen.chain_op(os.path.join(work, "op"), REFERENCE_CHAIN, VECTOR_ADD)
    honest = [gen.vector_add(os.path.join(work, "cand"), w, b, c, "p")
              for c in FASTER + SLOWER for w in (4, 2, 1) for b in (128, 256, 512)]
    groups = [(op, honest + failing_kinds())]
    if a.relu_n > 0:
        groups.append((os.path.join(a.kernelbench, "level1", "19_ReLU.py"),
                       gen.relu_set(os.path.join(work, "relu"), a.relu_n, tag="p")))
    files = [f for _, fs in groups for f in fs]
    runs = [("default", "default"), ("training", "training")]
    if a.repeat_default:
        runs.append(("default-again", "default"))
    results, walls = {}, {}
    for label, preset in runs:
        results[label], walls[label] = {}, 0.0
        for group_op, group in groups:
            recs, wall, stderr = run(a.kagent, group_op, group, preset, a.timeout, os.path.join(work, "cache-" + label))
            results[label].update(recs)
            walls[label] += wall
            print(f"{label}: {len(group)} candidates of {os.path.basename(group_op)} in {wall:.1f} s "
                  f"({wall / len(group):.2f} s each)")
            built = [l for l in stderr.splitlines() if l.startswith("built ahead")]
            if built:
                print("  " + built[-1])

    rows, equal, judged, ratios, again = [], 0, 0, [], []
    print(f"\n{'candidate':44} {'tier d':>6} {'tier t':>6} {'median d ms':>12} {'median t ms':>12} {'t/d':>8}")
    for f in files:
        d = summary_of(results["default"].get(f, {"error": "no record"}))
        t = summary_of(results["training"].get(f, {"error": "no record"}))
        if d.get("refused") or t.get("refused"):
            print(f"{os.path.basename(f):44} refused: {(d.get('refused') or t.get('refused'))[:80]}")
            continue
        judged += 1
        equal += d["tier"] == t["tier"]
        ratio = t["median_ms"] / d["median_ms"] if d["median_ms"] and t["median_ms"] else None
        if ratio is not None and d["tier"] > 0:
            ratios.append(ratio)
        row = {"candidate": f, "default": d, "training": t, "ratio": ratio}
        if a.repeat_default:
            d2 = summary_of(results["default-again"].get(f, {"error": "no record"}))
            row["default_again"] = d2
            if d2.get("median_ms") and d["median_ms"] and d["tier"] > 0:
                again.append(d2["median_ms"] / d["median_ms"])
        rows.append(row)
        fmt = lambda v: f"{v:.4f}" if v else "-"  # noqa: E731
        print(f"{os.path.basename(f):44} {d['tier']:>6} {t['tier']:>6} {fmt(d['median_ms']):>12} "
              f"{fmt(t['median_ms']):>12} {(f'{ratio:.4f}' if ratio else '-'):>8}"
              f"{'' if d['tier'] == t['tier'] else '   TIER DIFFERS'}")
    within = sum(abs(r - 1) <= 0.01 for r in ratios)
    worst = max((abs(r - 1) for r in ratios), default=0.0)
    print(f"\ntiers equal: {equal} of {judged} candidates; correct candidates with both medians: {len(ratios)}, "
          f"within 1%: {within}, largest |training/default - 1|: {100 * worst:.2f}%, "
          f"median ratio {statistics.median(ratios) if ratios else float('nan'):.4f}")
    if again:
        print(f"default vs default again: largest |ratio - 1| {100 * max(abs(r - 1) for r in again):.2f}%, "
              f"median ratio {statistics.median(again):.4f}")
    print("wall per candidate: " + ", ".join(f"{k} {v / len(files):.2f} s" for k, v in walls.items()))
    if a.out:
        with open(a.out, "w", encoding="utf-8") as fh:
            json.dump({"rows": rows, "walls_s": walls, "tiers_equal": equal, "judged": judged,
                       "within_1pct": within, "correct_compared": len(ratios), "worst_pct": 100 * worst}, fh, indent=1)
    return 0 if equal == judged and within == len(ratios) else 1


if __name__ == "__main__":
    sys.exit(main())
