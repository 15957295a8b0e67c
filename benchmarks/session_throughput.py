#!/usr/bin/env python3
"""Evaluations per second on one GPU: candidates judged one process each (`kagent eval C`) against
many candidates in one session (`kagent eval C1 C2 ... --op X`: one warm runner and reference
server, candidates compiled and built ahead on the CPU threads while the GPU measures), with the
default protocol and with `--preset training`. Every candidate is a distinct source
(generated_candidates.py), so each is compiled or built anew; the operator's reference, the
harness and the PyTorch baselines are measured once beforehand (a warm-up evaluation in the same
compile cache), as a long-running service has them.

Rows (each its own candidates):
  native     examples/vector_add (16M floats: a 65 us operator on an H100)
  pytorch    KernelBench level1/19_ReLU, native plans against the PyTorch reference
  modelnew   ModelNew ReLU solutions (load_inline) for level1/19_ReLU (or, with --modelnew-problem
             small, the same ReLU on a 1x128 tensor): one cold build alone, 16
             cold builds in one session (the build threads' span, first start to last end, against
             the single build's), then the same 16 again with their builds cached.
  modelnew-repeat  one cached ModelNew solution named --repeat-n times in one session (an RL batch at low
             temperature repeats completions): each evaluation gets a worker of its own started ahead.

"steady" is the time per evaluation between the --steady-from-th record and the last: the
session's start and its first evaluations left out, as a long-running service has them behind it.

    python3 benchmarks/session_throughput.py --kagent build/kagent --kernelbench DIR [--only native,pytorch]
        [--out throughput.json]

Needs a GPU; standard library only.
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import generated_candidates as gen  # noqa: E402

VECTOR_ADD = os.path.join(ROOT, "examples", "vector_add", "op.json")


class Bench:
    def __init__(self, kagent, cache, steady_from=1):
        self.kagent, self.env = kagent, dict(os.environ, KAGENT_CACHE_DIR=cache)
        self.rows = []
        self.steady_from = steady_from

    def eval(self, files, op, flags=(), timeout=900):
        """The records, the wall time, the build threads' span, and when each record came (s)."""
        cmd = [self.kagent, "eval", *files, "--op", op, "--json", *flags]
        t0 = time.monotonic()
        with tempfile.TemporaryFile(mode="w+") as err:
            p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=err, text=True, env=self.env)
            lines, arrivals = [], []
            for line in p.stdout:  # several candidates: one record a line, as each is judged
                lines.append(line)
                if line.startswith("{"):
                    arrivals.append(time.monotonic() - t0)
            p.wait(timeout=timeout)
            err.seek(0)
            stderr = err.read()
        wall = time.monotonic() - t0
        text = "".join(lines)
        try:  # one candidate: one record, printed over several lines
            recs = [json.loads(text)]
            arrivals = [wall]
        except ValueError:
            recs = [json.loads(l) for l in lines if l.strip().startswith("{")]
        span = None
        m = re.search(r"built ahead: (\d+) candidate\(s\) on (\d+) thread\(s\) in ([0-9.]+) s", stderr)
        if m:
            span = float(m.group(3))
        if len(recs) != len(files):
            print(f"  ! {len(recs)} records for {len(files)} candidates (exit {p.returncode}): {stderr[-1500:]}")
        return recs, wall, span, arrivals

    def row(self, group, mode, files, op, flags=(), separate=False):
        steady = None
        if separate:
            t0, recs = time.monotonic(), []
            for f in files:
                recs += self.eval([f], op, flags)[0]
            wall, span = time.monotonic() - t0, None
        else:
            recs, wall, span, arrivals = self.eval(files, op, flags)
            # Between the first record and the last: the session's start (the reference server, the
            # problem's tensors) left out, as a long-running service has it behind it.
            if len(arrivals) >= 2:
                k = max(0, min(self.steady_from, len(arrivals)) - 1)
                k = min(k, len(arrivals) - 2)
                steady = (arrivals[-1] - arrivals[k]) / (len(arrivals) - 1 - k)
        correct = sum(1 for r in recs if r.get("tier", -1) > 0)
        # The candidate's timing pass, median over the records: samples, their kernel time, the GPU's
        # busy time (each sample's poison and flush included) and the pass's wall time.
        passes = [r.get("outcome", {}).get("candidate_time") or {} for r in recs]
        passes = [t for t in passes if t.get("wall_s")]
        timing = None
        if passes:
            med = lambda k: statistics.median(t.get(k, 0) for t in passes)  # noqa: E731
            timing = {"samples": med("n"), "kernel_ms": 1e3 * med("gpu_time_s"), "busy_ms": 1e3 * med("busy_s"),
                      "wall_ms": 1e3 * med("wall_s"), "warmup_runs": med("warmup_n"),
                      "warmup_credit_ms": med("warmup_credit_ms"), "median_ms": med("median_ms"),
                      "span_ms": 1e3 * med("span_s"), "gap_ms": 1e3 * med("gap_s"),
                      "host_wait_ms": 1e3 * med("host_wait_s"),
                      "stops": sorted({t.get("stop_reason", "") for t in passes})}
        tiers = sorted({r.get("tier") for r in recs})
        row = {"group": group, "mode": mode, "n": len(files), "wall_s": wall, "per_eval_s": wall / len(files),
               "evals_per_s": len(files) / wall, "correct": correct, "tiers": tiers, "build_span_s": span,
               "steady_per_eval_s": steady, "timing_pass": timing}
        self.rows.append(row)
        print(f"{group:9} {mode:44} n={len(files):3} wall {wall:7.1f} s  {wall / len(files):6.2f} s/eval  "
              f"{len(files) / wall:6.2f} evals/s"
              + (f" (steady {steady:5.2f} s/eval, {1 / steady:6.2f}/s)" if steady else "")
              + f"  correct {correct}/{len(files)} tiers {tiers}"
              + (f"  builds' span {span:.1f} s" if span is not None else ""), flush=True)
        if timing:
            print(f"{'':9} timing pass (median): {timing['warmup_runs']:.0f} warm-up runs "
                  f"({timing['warmup_credit_ms']:.1f} ms credited), {timing['samples']:.0f} "
                  f"samples, kernel {timing['kernel_ms']:.1f} ms, GPU busy {timing['busy_ms']:.1f} ms, wall "
                  f"{timing['wall_ms']:.1f} ms; candidate median {timing['median_ms']:.4f} ms; stopped: "
                  f"{', '.join(timing['stops'])}; sampling spans {timing['span_ms']:.1f} ms of GPU time "
                  f"({timing['gap_ms']:.1f} ms between samples), host waited {timing['host_wait_ms']:.1f} ms",
                  flush=True)
        return row


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kagent", required=True)
    ap.add_argument("--kernelbench", default=os.environ.get("KAGENT_KERNELBENCH_DIR", ""))
    ap.add_argument("--only", default="native,pytorch,modelnew")
    ap.add_argument("--native-n", type=int, default=50)
    ap.add_argument("--pytorch-n", type=int, default=30)
    ap.add_argument("--separate-n", type=int, default=10, help="candidates of the one-process-each rows (0: none)")
    ap.add_argument("--modelnew-n", type=int, default=16)
    ap.add_argument("--modelnew-build-jobs", type=int, default=16)
    ap.add_argument("--modelnew-problem", default="19_ReLU",
                    help="19_ReLU (KernelBench's, 6.4 GB) or small (the same ReLU on a 1x128 tensor, where an "
                         "evaluation's fixed costs are all there is)")
    ap.add_argument("--repeat-n", type=int, default=8, help="copies of one solution in the modelnew-repeat row")
    ap.add_argument("--steady-from", type=int, default=1,
                    help="the record steady rates are counted from (1: the first; the issue's figure: 24 of 96)")
    ap.add_argument("--ahead-only", action="store_true", help="native: only the rows built ahead")
    ap.add_argument("--compare-credit", action="store_true",
                    help="native: also the built-ahead rows with --warmup-credit-gap-ms 0, side by side")
    ap.add_argument("--compare-count-setup", action="store_true",
                    help="native: also the training row built ahead with --count-setup false (its GPU time floor "
                         "counting the timed spans only, as before the preset counted set-up), side by side")
    ap.add_argument("--out")
    a = ap.parse_args()
    only = set(a.only.split(","))
    work = tempfile.mkdtemp(prefix="kagent-throughput-")
    b = Bench(a.kagent, os.path.join(work, "cache"), a.steady_from)
    relu = os.path.join(a.kernelbench, "level1", "19_ReLU.py")
    training = ("--preset", "training")
    serial = ("--build-jobs", "0")

    if "native" in only:
        d = os.path.join(work, "native")
        b.eval(gen.vector_add_set(d, 1, tag="warm"), VECTOR_ADD)  # the reference's compile and timing, the harness
        if a.separate_n > 0:
            b.row("native", "separate processes, default", gen.vector_add_set(d, a.separate_n, tag="a"), VECTOR_ADD,
                  separate=True)
            b.row("native", "separate processes, training", gen.vector_add_set(d, a.separate_n, tag="b"), VECTOR_ADD,
                  training, separate=True)
        if not a.ahead_only:
            b.row("native", "session, default, built in turn", gen.vector_add_set(d, a.native_n, tag="c"), VECTOR_ADD,
                  serial)
        b.row("native", "session, default, built ahead", gen.vector_add_set(d, a.native_n, tag="d"), VECTOR_ADD)
        if not a.ahead_only:
            b.row("native", "session, training, built in turn", gen.vector_add_set(d, a.native_n, tag="e"),
                  VECTOR_ADD, training + serial)
        b.row("native", "session, training, built ahead", gen.vector_add_set(d, a.native_n, tag="f"), VECTOR_ADD,
              training)
        if a.compare_count_setup:
            b.row("native", "session, training, built ahead, set-up not counted",
                  gen.vector_add_set(d, a.native_n, tag="i"), VECTOR_ADD, training + ("--count-setup", "false"))
        if a.compare_credit:  # the same rows with the warm-up's credit off: a full warm-up every pass
            off = ("--warmup-credit-gap-ms", "0")
            b.row("native", "session, default, built ahead, no warm-up credit", gen.vector_add_set(d, a.native_n, tag="g"),
                  VECTOR_ADD, off)
            b.row("native", "session, training, built ahead, no warm-up credit",
                  gen.vector_add_set(d, a.native_n, tag="h"), VECTOR_ADD, training + off)
    if "pytorch" in only:
        d = os.path.join(work, "pytorch")
        b.eval(gen.relu_set(d, 1, tag="warm"), relu)  # the baselines (eager, torch.compile) measured and cached
        if a.separate_n > 0:
            b.row("pytorch", "separate processes, default", gen.relu_set(d, a.separate_n, tag="a"), relu,
                  separate=True)
        b.row("pytorch", "session, default, built ahead", gen.relu_set(d, a.pytorch_n, tag="b"), relu)
        b.row("pytorch", "session, training, built ahead", gen.relu_set(d, a.pytorch_n, tag="c"), relu, training)
    if "modelnew" in only:
        d = os.path.join(work, "modelnew")
        if a.modelnew_problem == "small":
            relu = gen.small_relu_problem(os.path.join(work, "small"))
            b.eval(gen.relu_set(os.path.join(work, "small-warm"), 1, tag="warm"), relu)  # its baselines
        jobs = ("--build-jobs", str(a.modelnew_build_jobs))
        on = "1x128: " if a.modelnew_problem == "small" else ""
        # One solution named twice: built once ahead (the build threads' span is one build's time),
        # then evaluated twice with its build cached.
        single = gen.modelnew_relu_set(d, 1, tag="one")
        one = b.row("modelnew", on + "one cold build, evaluated twice, training", single * 2, relu, training + jobs)
        many = gen.modelnew_relu_set(d, a.modelnew_n, tag="many")
        cold = b.row("modelnew", on + f"{a.modelnew_n} cold builds, training, built ahead", many, relu, training + jobs)
        b.row("modelnew", on + f"the same {a.modelnew_n} cached, training", many, relu, training + jobs)
        if one["build_span_s"] and cold["build_span_s"]:
            print(f"modelnew: {a.modelnew_n} builds' span {cold['build_span_s']:.1f} s = "
                  f"{cold['build_span_s'] / one['build_span_s']:.2f}x one build's {one['build_span_s']:.1f} s")
    if "modelnew-repeat" in only:
        d = os.path.join(work, "modelnew-repeat")
        if a.modelnew_problem == "small":
            relu = gen.small_relu_problem(os.path.join(work, "small"))
        one = gen.modelnew_relu_set(d, 1, tag="rep")
        b.eval(one, relu, training)  # its build (cached from here on) and the problem's baselines
        b.row("modelnew", f"one cached solution x{a.repeat_n}, training", one * a.repeat_n, relu, training)
    if a.out:
        with open(a.out, "w", encoding="utf-8") as f:
            json.dump(b.rows, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
