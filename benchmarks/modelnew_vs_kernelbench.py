#!/usr/bin/env python3
"""kagent's score of KernelBench-style ModelNew solutions next to KernelBench's own timing of the
same files, in one run on one GPU (issue 20's measurement).

For each (solution, problem) pair, alternating A B B A:
  A  `kagent eval SOLUTION --op PROBLEM --json --precision fp32`: the candidate's median, its tier,
     and the evaluation's wall time (the first run builds the extension: cold; later runs find it
     in kagent's cache: warm);
  B  KernelBench's timing in a fresh python3 process: the solution imported as KernelBench does
     (its load_inline build in torch's default extension folder), 5 correctness trials against
     Model, then kernelbench.timing.time_execution_with_cuda_event (L2 cleared before each of 100
     trials, 3 warm-up runs), and that process's wall time.
Prints one row per pair: the medians, kagent/KernelBench, tiers and latencies.

KernelBench's sources are not part of kagent: pass a checkout's folder with --kernelbench-src
(its src/ holds the kernelbench package; run_on_gpu.sh carries one in build-kb/kernelbench-src).
KernelBench does not pin TF32; the pairs here are element-wise (no TF32 path), so both sides are
IEEE fp32.

Usage: benchmarks/modelnew_vs_kernelbench.py --kagent build/kagent --kernelbench-src DIR
           [--problems DIR] [--only SUBSTRING] [--reps 2]
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

KB_SIDE = r"""
import importlib.util, json, sys, time
t0 = time.monotonic()
import torch

def load(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    m = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(m)
    return m

# timing.py by its path: the package's __init__ pulls in KernelBench's API clients (dotenv, ...).
timing = load(sys.argv[1] + "/kernelbench/timing.py", "kb_timing")
ref = load(sys.argv[2], "kb_ref")
torch.manual_seed(42)
model = ref.Model(*ref.get_init_inputs()).cuda()
sol = load(sys.argv[3], "kb_sol")
build_s = time.monotonic() - t0
torch.manual_seed(42)
model_new = sol.ModelNew(*ref.get_init_inputs()).cuda()
ok = True
with torch.no_grad():
    for trial in range(5):
        torch.manual_seed(trial)
        inputs = [x.cuda() if isinstance(x, torch.Tensor) else x for x in ref.get_inputs()]
        ok = ok and torch.allclose(model(*inputs), model_new(*inputs), atol=1e-2, rtol=1e-2)
    times = timing.time_execution_with_cuda_event(model_new, inputs, num_warmup=3, num_trials=100, verbose=False,
                                                  device=torch.device("cuda", 0))
print(json.dumps({"median_ms": sorted(times)[len(times) // 2], "mean_ms": sum(times) / len(times), "correct": ok,
                  "build_s": build_s, "wall_s": time.monotonic() - t0}))
"""


def kagent_eval(kagent, sol, prob):
    t0 = time.monotonic()
    p = subprocess.run([kagent, "eval", sol, "--op", prob, "--json", "--precision", "fp32"], capture_output=True,
                       text=True, timeout=900)
    wall = time.monotonic() - t0
    try:
        j = json.loads(p.stdout)
    except json.JSONDecodeError:
        return {"error": (p.stdout + p.stderr)[-300:], "wall_s": wall}
    t = (j.get("outcome") or {}).get("candidate_time") or {}
    return {"median_ms": t.get("median_ms"), "tier": j.get("tier"), "wall_s": wall,
            "build_s": j.get("compile", {}).get("seconds"), "cache_hit": j.get("compile", {}).get("cache_hit"),
            "reason": j.get("reason")}


def kb_eval(kb_src, sol, prob):
    p = subprocess.run([sys.executable, "-c", KB_SIDE, os.path.join(kb_src, "src"), prob, sol], capture_output=True,
                       text=True, timeout=900)
    for line in reversed(p.stdout.splitlines()):
        if line.startswith("{"):
            return json.loads(line)
    return {"error": (p.stdout + p.stderr)[-300:]}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kagent", default=os.path.join(ROOT, "build", "kagent"))
    ap.add_argument("--kernelbench-src", required=True)
    ap.add_argument("--problems", default=os.environ.get("KAGENT_KERNELBENCH_DIR", os.path.join(ROOT, "..", "shared",
                                                                                                  "kernelbench")))
    ap.add_argument("--only", default="")
    ap.add_argument("--reps", type=int, default=2)
    a = ap.parse_args()
    prompts = os.path.join(a.kernelbench_src, "src", "kernelbench", "prompts")
    fixtures = os.path.join(ROOT, "tests", "gpu", "modelnew")
    pairs = [
        (os.path.join(prompts, "model_new_ex_add.py"), os.path.join(prompts, "model_ex_add.py")),
        (os.path.join(prompts, "model_new_ex_add_triton.py"), os.path.join(prompts, "model_ex_add.py")),
        (os.path.join(fixtures, "relu_load_inline.py"), os.path.join(a.problems, "level1", "19_ReLU.py")),
        (os.path.join(fixtures, "relu_triton.py"), os.path.join(a.problems, "level1", "19_ReLU.py")),
    ]
    rows = []
    for sol, prob in pairs:
        name = os.path.basename(sol)
        if a.only not in name:
            continue
        ka, kb = [], []
        for rep in range(a.reps):  # A B, then B A
            order = (0, 1) if rep % 2 == 0 else (1, 0)
            for side in order:
                if side == 0:
                    ka.append(kagent_eval(a.kagent, sol, prob))
                else:
                    kb.append(kb_eval(a.kernelbench_src, sol, prob))
        print(f"{name}: kagent {json.dumps(ka)}\n{name}: kernelbench {json.dumps(kb)}", flush=True)
        km = [r["median_ms"] for r in ka if r.get("median_ms")]
        bm = [r["median_ms"] for r in kb if r.get("median_ms")]
        k_med = statistics.median(km) if km else None
        b_med = statistics.median(bm) if bm else None
        rows.append((name, os.path.basename(prob), k_med, b_med, k_med / b_med if k_med and b_med else None,
                     ka[0].get("tier"), ka[0].get("wall_s"), ka[-1].get("wall_s") if len(ka) > 1 else None,
                     kb[0].get("wall_s"), kb[-1].get("wall_s") if len(kb) > 1 else None))
    hdr = ("solution", "problem", "kagent ms", "KB ms", "kagent/KB", "tier", "kagent cold s", "kagent warm s",
           "KB first s", "KB again s")
    print("| " + " | ".join(hdr) + " |")
    print("|" + "---|" * len(hdr))

    def f(v):
        return "n/a" if v is None else (f"{v:.4g}" if isinstance(v, float) else str(v))
    for r in rows:
        print("| " + " | ".join(f(v) for v in r) + " |")


if __name__ == "__main__":
    main()
