#!/usr/bin/env python3
"""The memory floor a task states, against the problem's own baselines.

A floor is a lower bound only when no baseline beats it: for each problem this runs `kagent optimize`
with a scripted model that finishes at its first turn (so the run measures the baselines and this
GPU's roofs, renders the task, and stops), reads the task's "Memory floor:" paragraph from the run's
transcript, and prints one row: the floor, the bandwidth it is taken at, eager and torch.compile
medians, each over the floor, and whether the text calls tier 3 out of reach. Exit 1 when a baseline
is faster than the floor the text gives without the text saying so, or when the text calls tier 3
out of reach although a baseline reaches its time. The task's sentence on the reference's own
error against fp64 (a PyTorch problem's) is printed beside, and so are the lines on the reference's
library calls timed alone (its GEMMs and convolutions): exit 1 also when a problem whose FLOPs the
task counts (it has a matrix product, convolution or attention) gets no such lines, or one of them
has no time, or a GEMM or convolution line has neither kagent's own step's time nor why it has none.

    python3 benchmarks/task_floors.py --kagent build/kagent --kernelbench KernelBench level1/12 level1/19
"""

import argparse
import glob
import json
import os
import re
import subprocess
import sys
import tempfile

FINISH = {"content": "Stopping at once: this run only renders the task.",
          "tool_calls": [{"name": "finish", "arguments": {"path": "none.cu", "summary": "no kernel"}}]}


def problem_file(kernelbench, pid):
    level, num = pid.split("/")
    hits = glob.glob(os.path.join(kernelbench, level, f"{num}_*.py"))
    if len(hits) != 1:
        sys.exit(f"task_floors: {pid}: {len(hits)} files match under {kernelbench}")
    return hits[0]


def opening_text(transcript):
    """Every message text of the run's transcript, joined (the task is among them)."""
    texts = []
    with open(transcript) as f:
        for line in f:
            try:
                ev = json.loads(line)
            except ValueError:
                continue
            for key in ("content", "text", "message"):
                v = ev.get(key)
                if isinstance(v, str):
                    texts.append(v)
                elif isinstance(v, dict) and isinstance(v.get("content"), str):
                    texts.append(v["content"])
    return "\n".join(texts)


def figure(pattern, text, cast=float):
    m = re.search(pattern, text)
    return cast(m.group(1)) if m else None


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kagent", required=True)
    ap.add_argument("--kernelbench", default=os.environ.get("KAGENT_KERNELBENCH_DIR", ""))
    ap.add_argument("--gpu", type=int, default=0)
    ap.add_argument("--out", help="JSON file for the rows")
    ap.add_argument("problems", nargs="+", help="KernelBench ids, e.g. level1/12")
    args = ap.parse_args()
    work = tempfile.mkdtemp(prefix="kagent-task-floors-")
    script = os.path.join(work, "finish.jsonl")
    with open(script, "w") as f:
        f.write(json.dumps(FINISH) + "\n")
    rows, bad = [], []
    for pid in args.problems:
        run = os.path.join(work, pid.replace("/", "_"))
        cmd = [args.kagent, "optimize", problem_file(args.kernelbench, pid), "--provider", "script", "--script",
               script, "--gpu", str(args.gpu), "--out", run, "--quiet"]
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
        transcript = os.path.join(run, "transcript.jsonl")
        if not os.path.exists(transcript):
            print(f"{pid}: no transcript (exit {p.returncode}): {p.stderr[-600:]}", flush=True)
            bad.append(pid)
            continue
        text = opening_text(transcript)
        para = next((ln for ln in text.splitlines() if ln.startswith("Memory floor:")), "")
        row = {
            "problem": pid,
            "floor_ms": figure(r"Memory floor: ([0-9.]+) ms", para),
            "bandwidth_gbs": figure(r" at ([0-9]+) GB/s", para),
            "eager_ms": figure(r"torch eager ([0-9]+\.[0-9]+) ms; torch\.compile", text),
            "compile_ms": figure(r"torch eager [^;\n]*; torch\.compile ([0-9]+\.[0-9]+) ms", text),
            "out_of_reach": "out of reach" in para,
            "says_beaten": "no bound here" in para or "no floor here bounds" in para,
            "paragraph": para,
            # The Correctness section's sentence on the reference's own error against fp64.
            "reference_error": next((ln for ln in text.splitlines()
                                     if ln.startswith("The reference's own error against its float64 result")), ""),
        }
        lines = text.splitlines()
        at = next((i for i, ln in enumerate(lines) if ln.startswith("The reference's library calls")), None)
        library = []
        if at is not None:
            for ln in lines[at + 1:]:
                library.append(ln)
                if ln.startswith("Together "):
                    break
        row["library_calls"] = library
        floor = row["floor_ms"]
        fastest = min((t for t in (row["eager_ms"], row["compile_ms"]) if t), default=None)
        problems = []
        if floor and fastest and fastest < floor and not row["says_beaten"]:
            problems.append("a baseline beats the floor and the text does not say so")
        if row["out_of_reach"] and fastest and floor and fastest <= floor:
            problems.append("tier 3 called out of reach while a baseline is at or under the floor")
        counted = any(ln.startswith("Compute floor: the operator's") for ln in lines)
        if counted and not library:
            problems.append("FLOPs counted but no library call timed in the task")
        if any(ln.startswith("- ") and ": not timed;" in ln for ln in library):
            problems.append("a library call left untimed")
        # Each GEMM and convolution shown has kagent's own step timed beside it, or says why none.
        calls = [ln for ln in library if ln.startswith("- aten.") and ("(cuBLAS)" in ln or "(cuDNN)" in ln)]
        if any("kagent's " not in ln and "step expresses it" not in ln for ln in calls):
            problems.append("a GEMM or convolution without kagent's step time")
        if any("step failed" in ln for ln in calls):
            problems.append("kagent's step failed for a call")
        row["problems"] = problems
        if problems:
            bad.append(pid)
        rows.append(row)
        ratio = lambda t: f"{t / floor:.2f}x" if t and floor else "-"  # noqa: E731
        print(f"{pid:10} floor {floor} ms at {row['bandwidth_gbs']} GB/s; eager {row['eager_ms']} ms "
              f"({ratio(row['eager_ms'])}), torch.compile {row['compile_ms']} ms ({ratio(row['compile_ms'])}); "
              f"out of reach: {row['out_of_reach']}; {'; '.join(problems) or 'consistent'}", flush=True)
        print(f"{'':10} {para}", flush=True)
        if row["reference_error"]:
            print(f"{'':10} {row['reference_error']}", flush=True)
        for ln in library:
            print(f"{'':10} {ln}", flush=True)
    if args.out:
        with open(args.out, "w") as f:
            json.dump(rows, f, indent=1)
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
