#!/usr/bin/env python3
"""Mixed batches on `kagent serve`, sent as an RL trainer sends a step: many problems at once, in
any order, to a service that keeps several problems warm per GPU worker (--warm-problems,
--warm-memory), starts announced problems ahead and prefers requests whose problem it has warm.
Four parts, each run on its own, each within its time budget (--budget-s: what does not fit is
skipped, and the report names it):

orders    N problems (by default every examples/kernelbench/levelN/NAME.cu whose levelN/NAME.py is
          under --kernelbench; at least --min-problems, 24) x R requests each (--requests, the same
          source under distinct names), all sent at once (a thread per request, each POSTing
          /v1/evaluate; the threads start in the order's order, each once the one before has sent
          its request) to a fresh service on --gpus, in two orders: shuffled (seeded) and sorted
          by problem, alternating for --rounds. A warm-up service first evaluates each problem
          twice and is stopped, so that neither order pays for the compile cache or the eager and
          torch.compile baselines (and its warm evaluations size R to the budget); it writes a marker
          into KAGENT_CACHE_DIR (--cache-dir), and problems the marker lists with the same files are
          not sent again by a later run on that cache. Per order: wall,
          throughput, p50/p99 latency (send to answer), answered and lost, the records by
          serve.problem (warm/cold) and problem_state, problem starts and evictions, GPU busy
          share; then the shuffled/sorted throughput ratio (goal >= 0.9).

    python3 benchmarks/mixed_batch.py orders --kagent build/kagent --kernelbench ../shared/kernelbench \\
        --gpus 0,1 --requests 16 --budget-s 400 --out orders.json

switch    Switching costs on one GPU (--gpus 0): requests sent one at a time, each answered before the
          next, in a pattern of problems (--pattern AAAABBBBAAAACCCCBBBBAAAACCCC): serve.evaluated_s
          of the first request after a switch back to a problem seen before against the median of
          that problem's repeats (goal: at most 0.2 s more). Then a new problem D announced ahead:
          [C, C, D] as one /v1/evaluate_batch, so that D waits in the queue while C is evaluated,
          against a repeat of D (goal: at most 1 s more); and for contrast a new problem E sent alone
          to the idle service (not announced), against a repeat of E.

    python3 benchmarks/mixed_batch.py switch --kagent build/kagent --kernelbench ../shared/kernelbench \\
        --gpus 0 --budget-s 90 --out switch.json

eviction  One GPU; the ballast problems of benchmarks/ops/ballast (relu of 1M elements with a model
          holding 28-37 GiB of GPU memory) and level1/19_ReLU (6.4 GB), --requests-each (8) each,
          shuffled, all at once, to a service with a generous --warm-problems (16), so that memory,
          not the count, bounds what stays warm. Every request must be answered (no HTTP error, no
          record with outcome.out_of_memory or a failure about memory), and /metrics must show
          evictions.

    python3 benchmarks/mixed_batch.py eviction --kagent build/kagent --kernelbench ../shared/kernelbench \\
        --gpus 0 --budget-s 120 --out eviction.json

verdicts  Each record an `orders` run served (--from its JSON) against `kagent eval SOLUTION --op
          PROBLEM --preset training --json --gpu G` run alone, once per problem, one process per GPU
          at a time: correct/incorrect equal on all, tiers equal on how many, and every tier
          difference with its speedups ("within noise" when both sides' speedups lie within 5% of the
          tier line between them: 1.0 vs eager, 1/0.95 vs torch.compile).

    python3 benchmarks/mixed_batch.py verdicts --kagent build/kagent --from orders.json --gpus 0,1 \\
        --budget-s 150 --out verdicts.json

Each part prints progress, then a short table; --out writes the figures and every request's record
(compacted) as JSON. Exit 0: ran, nothing lost, goals met; 1: something lost or a goal missed; 2: bad
arguments; 3: the service or kagent could not run. Needs GPUs and a kagent built with cpp-httplib;
standard library only.
"""
import argparse
import atexit
import collections
import glob
import hashlib
import http.client
import json
import os
import random
import re
import shlex
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
DEFAULT_SOLUTIONS = os.path.join(ROOT, "examples", "kernelbench")
BALLAST_DIR = os.path.join(HERE, "ops", "ballast")
RELU_PROBLEM = "level1/19_ReLU"
RELU_SOLUTION = os.path.join(DEFAULT_SOLUTIONS, "level1", "19_ReLU.cu")
# Problems with small inputs (GEMMs of 1024 x 8192 by 8192 x 8192): quick evaluations, so that a
# switch's cost is not lost in the evaluation's own time. A, B, C, D (announced) and E (not).
SWITCH_DEFAULTS = ["level2/76_Gemm_Add_ReLU", "level2/12_Gemm_Multiply_LeakyReLU", "level2/29_Matmul_Mish_Mish",
                   "level2/99_Matmul_GELU_Softmax", "level1/1_Square_matrix_multiplication_"]
COMPILE_MARGIN = 0.95  # tier 3: at most 0.95x torch.compile's time (docs/measurement.md)
NOISE = 0.05  # a speedup within 5% of a tier line
MEMORY_FAILURE = re.compile(r"out of memory|\bOOM\b|OutOfMemory|OUT_OF_MEMORY|MemoryAllocation|cannot allocate|"
                            r"failed to allocate", re.I)
WARM_MARKER = "mixed_batch-warm.json"


class Skipped(list):
    """What a part left out, each a sentence."""

    def add(self, text):
        print(f"  skipped: {text}", flush=True)
        self.append(text)


# ---------------------------------------------------------------------------------------------
# Problems, requests, orders (no service needed)


def natural_key(problem):
    """'level1/19_ReLU' -> (1, 19, '19_relu'): levels and problem numbers in numeric order."""
    level, _, name = problem.partition("/")
    lv = re.match(r"level(\d+)$", level)
    num = re.match(r"(\d+)", name)
    return (int(lv.group(1)) if lv else 1 << 30, level, int(num.group(1)) if num else 1 << 30, name.lower())


def find_problems(solution_dirs, kernelbench):
    """[{problem, solution, file}] for every solution DIR/levelN/NAME.cu whose KernelBench problem
    kernelbench/levelN/NAME.py exists (the first solution of a problem wins), in natural order; and
    the solutions without a problem."""
    found, missing = {}, []
    for d in solution_dirs:
        for level_dir in sorted(glob.glob(os.path.join(d, "level*"))):
            level = os.path.basename(level_dir)
            for sol in sorted(glob.glob(os.path.join(level_dir, "*.cu"))):
                stem = os.path.basename(sol)[:-3]
                problem = f"{level}/{stem}"
                path = os.path.join(kernelbench, level, stem + ".py")
                if not os.path.isfile(path):
                    missing.append(os.path.relpath(sol, ROOT) if sol.startswith(ROOT) else sol)
                elif problem not in found:
                    found[problem] = {"problem": problem, "solution": os.path.abspath(sol),
                                      "file": os.path.abspath(path)}
    return [found[p] for p in sorted(found, key=natural_key)], missing


def kind_of(path):
    return "modelnew" if path.endswith(".py") else "plan"


def request_body(problem, source, kind, name, preset):
    body = {"source": source, "kind": kind, "problem": problem, "name": name}
    if preset:
        body["measure"] = {"preset": preset}
    return body


def build_requests(problems, repeats, preset, tag="r", sources=None):
    """repeats requests per problem, each {problem, solution, rep, name, data}: the solution's source
    under a distinct name (the sources read once)."""
    sources = {} if sources is None else sources
    out = []
    for p in problems:
        if p["solution"] not in sources:
            with open(p["solution"], encoding="utf-8") as f:
                sources[p["solution"]] = f.read()
        stem = p["problem"].split("/", 1)[1]
        ext = os.path.splitext(p["solution"])[1]
        for j in range(repeats):
            name = f"{stem}-{tag}{j:02d}{ext}"
            body = request_body(p["problem"], sources[p["solution"]], kind_of(p["solution"]), name, preset)
            out.append({"problem": p["problem"], "solution": p["solution"], "rep": j, "name": name,
                        "path": "/v1/evaluate", "data": json.dumps(body).encode()})
    return out


def arrange(requests, order, seed):
    """The requests in `order`: "sorted" by problem (then repetition), or "shuffled" with `seed`."""
    if order == "sorted":
        return sorted(requests, key=lambda r: (natural_key(r["problem"]), r["rep"]))
    if order == "shuffled":
        out = list(requests)
        random.Random(seed).shuffle(out)
        return out
    raise ValueError(f"unknown order {order!r}")


def order_plan(rounds, which="both"):
    """[(order, round)]: the two orders in alternation, or one of them (`which`)."""
    kinds = ("shuffled", "sorted") if which == "both" else (which,)
    return [(order, r + 1) for r in range(rounds) for order in kinds]


def fit_budget(requests, rounds, eval_s, n_gpus, start_s, available_s, overhead_s=10.0, n_orders=2):
    """(requests, rounds, estimated seconds per order) that fit available_s for the n_orders x rounds
    orders: eval_s the warm evaluation time of each problem, start_s a problem's start. Rounds go
    first, then requests per problem (at least 1)."""
    n_gpus = max(1, n_gpus)

    def est(r):
        return 1.2 * (r * sum(eval_s) + len(eval_s) * start_s) / n_gpus + overhead_s

    while rounds > 1 and n_orders * rounds * est(requests) > available_s:
        rounds -= 1
    while requests > 1 and n_orders * rounds * est(requests) > available_s:
        requests -= 1
    return requests, rounds, est(requests)


def switch_plan(pattern):
    """[(letter, what)] for a pattern such as 'AAAABBBB': what is 'first' (a letter not seen
    before), 'repeat' (the letter before it is the same) or 'back' (a switch back to a letter seen
    before)."""
    out, seen, prev = [], set(), None
    for c in pattern:
        if not c.isalpha():
            raise ValueError(f"--pattern: {c!r} is not a letter")
        out.append((c, "repeat" if c == prev else ("back" if c in seen else "first")))
        seen.add(c)
        prev = c
    return out


def pick_switch_problems(available, wanted, letters):
    """Problem ids for `letters` (A, B, ...): `wanted` where available, then the others in order."""
    names = [p for p in wanted if p in available]
    names += [p for p in available if p not in names]
    if len(names) < len(letters):
        raise ValueError(f"{len(letters)} problems needed ({''.join(letters)}), {len(names)} available")
    return dict(zip(letters, names))


# ---------------------------------------------------------------------------------------------
# Records, metrics, statistics


def percentile(values, p):
    """The p-th percentile by nearest rank over the sorted values; None for none."""
    if not values:
        return None
    v = sorted(values)
    return v[min(len(v) - 1, max(0, int(round(p / 100 * (len(v) - 1)))))]


def compact(rec):
    """The fields of a `kagent eval --json` record (or a served one) these reports read."""
    if not isinstance(rec, dict):
        return None
    o = rec.get("outcome") or {}
    serve = rec.get("serve") or {}
    base = rec.get("baselines") or {}
    return {
        "candidate": rec.get("candidate"),
        "tier": rec.get("tier"),
        "compiled": (rec.get("compile") or {}).get("ok"),
        "correct": bool(o.get("correct")),
        "failure_stage": o.get("failure_stage"),
        "message": (o.get("message") or rec.get("error") or "")[:400],
        "out_of_memory": bool(o.get("out_of_memory")),
        "candidate_ms": (o.get("candidate_time") or {}).get("median_ms"),
        "eager_ms": base.get("eager_ms"),
        "compile_ms": base.get("compile_ms"),
        "speedup_vs_eager": rec.get("speedup_vs_eager"),
        "speedup_vs_compile": rec.get("speedup_vs_compile"),
        "reason": rec.get("reason"),
        "serve": {k: serve.get(k) for k in ("gpu", "queued_s", "evaluated_s", "problem")} if serve else None,
        "problem_state": rec.get("problem_state"),
        "problem_wait_s": rec.get("problem_wait_s"),
    }


def memory_failure(c):
    """Whether a compact record is an out-of-memory verdict or a failure that mentions memory."""
    if c is None:
        return False
    if c.get("out_of_memory"):
        return True
    return not c.get("correct") and bool(MEMORY_FAILURE.search(c.get("message") or ""))


_METRIC = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{([^}]*)\})?\s+(\S+)")
_LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')


def parse_metrics(text):
    """Prometheus text -> [(name, {label: value}, float)]; comments and bad lines skipped."""
    out = []
    for line in (text or "").splitlines():
        if not line or line.startswith("#"):
            continue
        m = _METRIC.match(line)
        if not m:
            continue
        try:
            value = float(m.group(3))
        except ValueError:
            continue
        out.append((m.group(1), dict(_LABEL.findall(m.group(2) or "")), value))
    return out


def metric_total(metrics, name, **labels):
    return sum(v for n, l, v in metrics if n == name and all(l.get(k) == str(x) for k, x in labels.items()))


def metric_by(metrics, name, label):
    out = collections.Counter()
    for n, l, v in metrics:
        if n == name:
            out[l.get(label, "")] += v
    return dict(out)


def metric_max(metrics, name):
    vals = [v for n, _, v in metrics if n == name]
    return max(vals) if vals else None


def diff_by(after, before, name, label):
    a, b = metric_by(after, name, label), metric_by(before, name, label)
    return {k: a.get(k, 0) - b.get(k, 0) for k in sorted(set(a) | set(b))}


def summarize(results, wall, before, after, monitor=None):
    """The figures of one batch: results are send_all's."""
    answered = [r for r in results if r and r.get("status") == 200 and r.get("record")]
    lost = [r for r in results if not (r and r.get("status") == 200 and r.get("record"))]
    lat = [r["latency_s"] for r in answered]
    recs = [r["record"] for r in answered]
    serve = [c.get("serve") or {} for c in recs]
    busy = diff_by(after, before, "kagent_gpu_busy_seconds_total", "gpu")
    evaluated = [s.get("evaluated_s") for s in serve if isinstance(s.get("evaluated_s"), (int, float))]
    queued = [s.get("queued_s") for s in serve if isinstance(s.get("queued_s"), (int, float))]
    out = {
        "requests": len(results), "answered": len(answered), "lost": len(lost), "wall_s": wall,
        "throughput_per_s": len(answered) / wall if wall > 0 else None,
        "p50_s": percentile(lat, 50), "p99_s": percentile(lat, 99), "mean_s": statistics.mean(lat) if lat else None,
        "serve_problem": dict(collections.Counter(s.get("problem") or "-" for s in serve)),
        "problem_state": dict(collections.Counter(c.get("problem_state") or "-" for c in recs)),
        "tiers": {str(k): v for k, v in sorted(collections.Counter(c.get("tier") for c in recs).items(),
                                               key=lambda kv: (kv[0] is None, kv[0] or 0))},
        "correct": sum(1 for c in recs if c.get("correct")),
        "by_gpu": {str(k): v for k, v in sorted(collections.Counter(s.get("gpu") for s in serve).items(),
                                                key=lambda kv: str(kv[0]))},
        "evaluated_s_sum": sum(evaluated), "evaluated_s_p50": percentile(evaluated, 50),
        "queued_s_p50": percentile(queued, 50),
        "gpu_busy_s": busy, "gpu_busy_share": {g: (s / wall if wall > 0 else None) for g, s in busy.items()},
        "problem_starts": diff_by(after, before, "kagent_problem_starts_total", "how"),
        "queue_picks": diff_by(after, before, "kagent_queue_picks_total", "rule"),
        "evictions": metric_total(after, "kagent_problem_evictions_total")
        - metric_total(before, "kagent_problem_evictions_total"),
        "memory_failures": sum(1 for c in recs if memory_failure(c)),
        "lost_examples": [f"{r.get('name')}: {r.get('status')} {r.get('error')}" for r in lost[:10]],
        "lost_by_status": dict(collections.Counter(str(r.get("status")) for r in lost)),
    }
    if monitor is not None:
        out.update(monitor.figures())
    return out


def lines_crossed(a, b):
    """The tier lines two compact records lie on opposite sides of: [(kind, line)], kind
    'eager' (speedup_vs_eager 1.0) or 'compile' (speedup_vs_compile 1/0.95); None when a side has
    no speedup to place."""
    out = []
    for kind, key, line in (("eager", "speedup_vs_eager", 1.0),
                            ("compile", "speedup_vs_compile", 1 / COMPILE_MARGIN)):
        sa, sb = a.get(key), b.get(key)
        if sa is None or sb is None:
            if (sa is None) != (sb is None):
                return None
            continue
        above_a = sa > line if kind == "eager" else sa >= line
        above_b = sb > line if kind == "eager" else sb >= line
        if above_a != above_b:
            out.append((kind, key, line))
    return out


def within_noise(a, b):
    """Whether two correct records of different tiers differ only by noise: each tier line they lie on
    opposite sides of has both speedups within 5% of it."""
    crossed = lines_crossed(a, b)
    if not crossed:
        return False
    return all(abs(a[key] / line - 1) <= NOISE and abs(b[key] / line - 1) <= NOISE for _, key, line in crossed)


def compare_verdicts(served, alone):
    """served: [{problem, solution, record}]; alone: {(solution, problem): compact record}. Returns
    the comparison's figures."""
    compared = correct_equal = tiers_equal = 0
    not_compared = collections.Counter()
    correctness_diffs, tier_diffs = [], []
    for s in served:
        key = (s["solution"], s["problem"])
        a = alone.get(key)
        if a is None:
            not_compared[s["problem"]] += 1
            continue
        r = s["record"]
        compared += 1
        if bool(r.get("correct")) == bool(a.get("correct")):
            correct_equal += 1
        else:
            correctness_diffs.append({"problem": s["problem"], "name": s.get("name"), "served": r, "alone": a})
        if r.get("tier") == a.get("tier"):
            tiers_equal += 1
        elif r.get("correct") and a.get("correct"):
            tier_diffs.append({"problem": s["problem"], "name": s.get("name"), "served_tier": r.get("tier"),
                               "alone_tier": a.get("tier"),
                               "served_speedup_vs_eager": r.get("speedup_vs_eager"),
                               "served_speedup_vs_compile": r.get("speedup_vs_compile"),
                               "alone_speedup_vs_eager": a.get("speedup_vs_eager"),
                               "alone_speedup_vs_compile": a.get("speedup_vs_compile"),
                               "within_noise": within_noise(r, a)})
    return {"compared": compared, "correct_equal": correct_equal, "tiers_equal": tiers_equal,
            "correctness_diffs": correctness_diffs, "tier_diffs": tier_diffs,
            "tier_diffs_within_noise": sum(1 for d in tier_diffs if d["within_noise"]),
            "not_compared": dict(not_compared)}


def parse_eval_output(text):
    """The records `kagent eval --json` printed: one (possibly over several lines), or one a line."""
    text = (text or "").strip()
    if not text:
        return []
    try:
        one = json.loads(text)
        return [one] if isinstance(one, dict) else []
    except ValueError:
        pass
    out = []
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("{"):
            try:
                out.append(json.loads(line))
            except ValueError:
                pass
    return out


def match_records(records, solutions):
    """{solution: record}: by the record's candidate name (its file's base name), else in order."""
    out, rest = {}, list(records)
    for sol in solutions:
        base = os.path.basename(sol)
        hit = next((r for r in rest if os.path.basename(str(r.get("candidate") or "")) == base), None)
        if hit is not None:
            out[sol] = hit
            rest.remove(hit)
    for sol in solutions:
        if sol not in out and rest:
            out[sol] = rest.pop(0)
    return out


# ---------------------------------------------------------------------------------------------
# Tables


def fmt(v, digits=2):
    if v is None:
        return "-"
    if isinstance(v, float):
        return f"{v:.{digits}f}"
    return str(v)


def table(header, rows):
    """Fixed-width text: the first column left-aligned, the others right-aligned."""
    cells = [[str(c) for c in header]] + [[fmt(c) for c in r] for r in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(header))]
    lines = []
    for r in cells:
        lines.append("  ".join(c.ljust(widths[i]) if i == 0 else c.rjust(widths[i]) for i, c in enumerate(r)))
    return "\n".join(lines)


def counts_text(d, keys=None):
    keys = keys or sorted(d)
    return " ".join(f"{k}:{int(d[k])}" for k in keys if d.get(k)) or "-"


def busy_text(shares):
    return " ".join(f"g{g}:{100 * s:.0f}%" for g, s in sorted(shares.items()) if s is not None) or "-"


def order_rows(orders):
    rows = []
    for o in orders:
        s = o["summary"]
        rows.append([o["order"] + ("*" if o.get("earlier") else ""), o["round"], o["requests_per_problem"], s["requests"], s["answered"], s["lost"],
                     s["wall_s"], s["throughput_per_s"], s["p50_s"], s["p99_s"],
                     counts_text(s["serve_problem"], ["warm", "cold", "-"]),
                     counts_text(s["problem_state"], ["current", "warm", "started_ahead", "started", "-"]),
                     counts_text(s["problem_starts"]), int(s["evictions"]), counts_text(s.get("queue_picks") or {}),
                     busy_text(s["gpu_busy_share"]), s.get("max_queue_depth")])
    return table(["order", "round", "R", "requests", "answered", "lost", "wall s", "req/s", "p50 s", "p99 s",
                  "serve.problem", "problem_state", "starts", "evict", "picks", "GPU busy", "max queue"], rows)


def ratio_of(orders):
    """Mean throughput shuffled / sorted over the orders that ran whole; None without both."""
    tp = collections.defaultdict(list)
    for o in orders:
        if not o.get("cut") and o["summary"]["throughput_per_s"]:
            tp[o["order"]].append(o["summary"]["throughput_per_s"])
    if not tp["shuffled"] or not tp["sorted"]:
        return None
    return statistics.mean(tp["shuffled"]) / statistics.mean(tp["sorted"])


# ---------------------------------------------------------------------------------------------
# The service and HTTP


def http_call(url, method, path, body=None, timeout=30.0):
    """(status, parsed JSON or text, error): status 0 when no answer came."""
    u = urllib.parse.urlsplit(url)
    conn = http.client.HTTPConnection(u.hostname, u.port, timeout=timeout)
    try:
        headers = {"Connection": "close"}
        if body is not None:
            headers["Content-Type"] = "application/json"
            body = body if isinstance(body, bytes) else json.dumps(body).encode()
        conn.request(method, path, body=body, headers=headers)
        resp = conn.getresponse()
        data = resp.read()
        text = data.decode("utf-8", "replace")
        try:
            return resp.status, json.loads(text), None
        except ValueError:
            return resp.status, text, None
    except (OSError, http.client.HTTPException) as e:
        return 0, None, f"{type(e).__name__}: {e}"
    finally:
        conn.close()


def error_text(status, payload, err):
    if err:
        return err
    if isinstance(payload, dict) and isinstance(payload.get("error"), dict):
        e = payload["error"]
        return f"{e.get('field') or ''}: {e.get('message')}".strip(": ")
    if isinstance(payload, dict) and payload.get("reason"):  # /health's 503
        return str(payload["reason"])
    return str(payload)[:300]


_LIVE = set()  # services started and not stopped: stopped at exit


@atexit.register
def _stop_live():
    for svc in list(_LIVE):
        svc.stop(timeout_s=30)


class Service:
    """A `kagent serve` process on a free port, its output in a log."""

    def __init__(self, kagent, root, gpus, log_path, env, preset="training", queue=4096, extra=()):
        self.cmd = [kagent, "serve", "--problems-root", root, "--gpus", gpus, "--port", "0", "--queue", str(queue),
                    "--max-batch", "1024", "--max-body-mb", "64"]
        if preset:
            self.cmd += ["--preset", preset]
        self.cmd += list(extra)
        self.log_path, self.env = log_path, env
        self.proc, self.url = None, None

    def start(self, timeout_s=120.0):
        """Starts it and waits for its port and a /health answer; raises RuntimeError saying why not."""
        with open(self.log_path, "a", encoding="utf-8") as log:
            log.write("$ " + " ".join(shlex.quote(c) for c in self.cmd) + "\n")
        log = open(self.log_path, "a", encoding="utf-8")
        start_offset = os.path.getsize(self.log_path)
        try:
            # In this process's group: a `timeout` that stops this script stops the service too.
            self.proc = subprocess.Popen(self.cmd, stdout=log, stderr=subprocess.STDOUT, env=self.env)
            _LIVE.add(self)
        except OSError as e:
            raise RuntimeError(f"cannot run {self.cmd[0]}: {e}") from None
        finally:
            log.close()
        end = time.monotonic() + timeout_s
        while time.monotonic() < end:
            with open(self.log_path, encoding="utf-8", errors="replace") as f:
                f.seek(start_offset)
                m = re.search(r"listening on (http://[^\s:]+:\d+)", f.read())
            if m:
                self.url = m.group(1)
                break
            if self.proc.poll() is not None:
                raise RuntimeError(f"kagent serve ended (exit {self.proc.returncode}): {self.tail()}")
            time.sleep(0.1)
        if self.url is None:
            self.stop()
            raise RuntimeError(f"kagent serve printed no address in {timeout_s:.0f} s: {self.tail()}")
        while time.monotonic() < end:
            status, payload, _ = http_call(self.url, "GET", "/health", timeout=5)
            if status == 200:
                return self.url
            if status == 503:
                self.stop()
                raise RuntimeError(f"kagent serve cannot evaluate: {error_text(status, payload, None)}")
            if self.proc.poll() is not None:
                raise RuntimeError(f"kagent serve ended (exit {self.proc.returncode}): {self.tail()}")
            time.sleep(0.2)
        self.stop()
        raise RuntimeError(f"kagent serve did not answer /health in {timeout_s:.0f} s")

    def tail(self, n=1500):
        try:
            with open(self.log_path, encoding="utf-8", errors="replace") as f:
                return f.read()[-n:].strip()
        except OSError:
            return ""

    def metrics(self):
        status, payload, _ = http_call(self.url, "GET", "/metrics", timeout=10)
        return parse_metrics(payload) if status == 200 and isinstance(payload, str) else []

    def stop(self, timeout_s=60.0):
        """SIGTERM (requests still queued are answered 503), SIGKILL after timeout_s; the exit code."""
        p = self.proc
        if p is None or p.poll() is not None:
            return None if p is None else p.returncode
        p.send_signal(signal.SIGTERM)
        try:
            return p.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            p.kill()
            return p.wait(timeout=30)
        finally:
            _LIVE.discard(self)


class Monitor:
    """Polls /metrics (queue depth, warm problems) and, where nvidia-smi exists, the GPUs' memory."""

    def __init__(self, service, interval_s=1.0, gpus=None):
        self.service, self.interval_s, self.gpus = service, interval_s, gpus
        self.max_queue = 0
        self.max_warm = {}
        self.max_warm_gib = {}
        self.max_mem_mib = {}
        self.total_mib = {}
        self.samples = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._smi = shutil.which("nvidia-smi") if gpus is not None else None

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join(timeout=10)

    def _run(self):
        while not self._stop.is_set():
            m = self.service.metrics()
            if m:
                self.samples += 1
                self.max_queue = max(self.max_queue, int(metric_max(m, "kagent_queue_depth") or 0))
                for g, v in metric_by(m, "kagent_warm_problems", "gpu").items():
                    self.max_warm[g] = max(self.max_warm.get(g, 0), int(v))
                for g, v in metric_by(m, "kagent_warm_gpu_bytes", "gpu").items():
                    self.max_warm_gib[g] = max(self.max_warm_gib.get(g, 0), v / 2**30)
            if self._smi:
                self._memory()
            self._stop.wait(self.interval_s)

    def _memory(self):
        try:
            out = subprocess.run([self._smi, "--query-gpu=index,memory.used,memory.total",
                                  "--format=csv,noheader,nounits"], capture_output=True, text=True, timeout=10).stdout
        except (OSError, subprocess.SubprocessError):
            return
        for line in out.splitlines():
            parts = [x.strip() for x in line.split(",")]
            if len(parts) == 3 and parts[0] in self.gpus:
                try:
                    used, total = float(parts[1]), float(parts[2])
                except ValueError:
                    continue
                self.max_mem_mib[parts[0]] = max(self.max_mem_mib.get(parts[0], 0), used)
                self.total_mib[parts[0]] = total

    def figures(self):
        out = {"max_queue_depth": self.max_queue, "max_warm_problems": self.max_warm,
               "max_warm_gpu_gib": self.max_warm_gib, "metrics_samples": self.samples}
        if self.max_mem_mib:
            out["max_gpu_memory_mib"] = self.max_mem_mib
            out["gpu_memory_total_mib"] = self.total_mib
        return out


def send_all(url, items, deadline, on_deadline=None):
    """Every item POSTed at once, a thread each; thread i+1 starts once thread i has sent its request
    (or 10 s passed), so that the requests reach the service in the items' order. Waits for the
    answers until `deadline` (time.monotonic()); then calls on_deadline() (stopping the service, so
    that what waits is answered) and waits a little more. Returns (results in item order, wall s)."""
    u = urllib.parse.urlsplit(url)
    results = [None] * len(items)
    t0 = time.monotonic()

    def one(i, item, sent):
        ts = time.monotonic()
        res = {"i": i, "problem": item["problem"], "solution": item["solution"], "name": item["name"],
               "t_send": ts - t0, "status": 0, "error": None, "record": None}
        conn = http.client.HTTPConnection(u.hostname, u.port, timeout=max(1.0, deadline - ts + 120))
        try:
            conn.request("POST", item["path"], body=item["data"],
                         headers={"Content-Type": "application/json", "Connection": "close"})
            sent.set()
            resp = conn.getresponse()
            data = resp.read()
            res["status"] = resp.status
            try:
                payload = json.loads(data.decode("utf-8", "replace"))
            except ValueError:
                payload = data[:300].decode("utf-8", "replace")
            if resp.status == 200 and isinstance(payload, dict) and "error" not in payload:
                res["record"] = compact(payload) if item["path"] == "/v1/evaluate" else payload
            else:
                res["error"] = error_text(resp.status, payload, None)
        except (OSError, http.client.HTTPException) as e:
            res["error"] = f"{type(e).__name__}: {e}"
        finally:
            sent.set()
            conn.close()
            res["latency_s"] = time.monotonic() - ts
            results[i] = res

    old = threading.stack_size()
    threading.stack_size(512 * 1024)
    threads = []
    try:
        for i, item in enumerate(items):
            sent = threading.Event()
            t = threading.Thread(target=one, args=(i, item, sent), daemon=True)
            t.start()
            threads.append(t)
            sent.wait(10)
    finally:
        threading.stack_size(old)
    for t in threads:
        t.join(max(0.0, deadline - time.monotonic()))
    if any(t.is_alive() for t in threads):
        if on_deadline is not None:
            on_deadline()
        for t in threads:
            t.join(30)
    wall = max((r["t_send"] + r["latency_s"] for r in results if r), default=0.0)
    for i, r in enumerate(results):
        if r is None:
            results[i] = {"i": i, "problem": items[i]["problem"], "solution": items[i]["solution"],
                          "name": items[i]["name"], "t_send": None, "status": 0, "latency_s": None,
                          "error": "no answer by the deadline", "record": None}
    return results, wall


# ---------------------------------------------------------------------------------------------
# The parts


class Context:
    def __init__(self, a):
        self.a = a
        self.t0 = time.monotonic()
        self.deadline = self.t0 + a.budget_s
        self.work = a.work or tempfile.mkdtemp(prefix="kagent-mixed-")
        os.makedirs(self.work, exist_ok=True)
        self.env = dict(os.environ)
        if a.cache_dir:
            self.env["KAGENT_CACHE_DIR"] = os.path.abspath(a.cache_dir)
        self.cache_dir = self.env.get("KAGENT_CACHE_DIR")
        self.skipped = Skipped()
        self.services = 0

    def left(self):
        return self.deadline - time.monotonic()

    def service(self, root, gpus, tag, extra=()):
        self.services += 1
        extra = list(extra) + shlex.split(self.a.serve_args or "")
        return Service(self.a.kagent, root, gpus, os.path.join(self.work, f"serve-{self.services:02d}-{tag}.log"),
                       self.env, preset=self.a.preset, queue=self.a.queue, extra=extra)


def problem_hash(p):
    h = hashlib.sha256()
    for path in (p["solution"], p["file"]):
        with open(path, "rb") as f:
            h.update(f.read())
    return h.hexdigest()


def read_marker(ctx):
    if not ctx.cache_dir:
        return {}
    try:
        with open(os.path.join(ctx.cache_dir, WARM_MARKER), encoding="utf-8") as f:
            return json.load(f)
    except (OSError, ValueError):
        return {}


def write_marker(ctx, marker):
    if not ctx.cache_dir:
        return
    try:
        os.makedirs(ctx.cache_dir, exist_ok=True)
        with open(os.path.join(ctx.cache_dir, WARM_MARKER), "w", encoding="utf-8") as f:
            json.dump(marker, f, indent=1)
    except OSError:
        pass


def warm_up(ctx, problems, root, gpus, share):
    """Each problem evaluated twice through a service that is then stopped: the compile cache and the
    baselines filled. Problems the cache's marker lists (same solution and problem file) are not sent
    again. Returns ({problem: warm evaluation seconds or None}, [problems that failed], figures)."""
    marker = read_marker(ctx)
    todo = [p for p in problems if marker.get(p["problem"], {}).get("hash") != problem_hash(p)]
    eval_s = {p["problem"]: marker.get(p["problem"], {}).get("eval_s") for p in problems if p not in todo}
    figures = {"sent_problems": len(todo), "from_marker": len(problems) - len(todo)}
    if not todo:
        print(f"warm-up: every problem already warm in {ctx.cache_dir} ({WARM_MARKER})", flush=True)
        return eval_s, [], figures
    budget = max(10.0, share * ctx.left())
    print(f"warm-up: {len(todo)} problems x 2 through one service on GPUs {gpus} (at most {budget:.0f} s)",
          flush=True)
    svc = ctx.service(root, gpus, "warmup")
    svc.start()
    items = build_requests(todo, 2, ctx.a.preset, tag="warm")
    results, wall = send_all(svc.url, items, time.monotonic() + budget, on_deadline=svc.stop)
    svc.stop()
    by = collections.defaultdict(list)
    for r in results:
        by[r["problem"]].append(r)
    failed = []
    for p in todo:
        rs = by[p["problem"]]
        ok = [r for r in rs if r["record"]]
        if not ok:
            failed.append(p["problem"])
            ctx.skipped.add(f"{p['problem']}: the warm-up got no record ({rs[0]['status'] if rs else '-'} "
                            f"{rs[0]['error'] if rs else ''}); left out of the orders")
            continue
        # A warm evaluation's time (the problem already loaded on its worker): a first visit's
        # includes the problem's start, which would make the budget cut R for nothing.
        def seconds(recs):
            return [x for x in ((r["record"].get("serve") or {}).get("evaluated_s") for r in recs)
                    if isinstance(x, (int, float))]
        secs = seconds([r for r in ok if r["record"].get("problem_state") in ("current", "warm")]) or seconds(ok)
        eval_s[p["problem"]] = min(secs) if secs else None
        if not all(r["record"].get("correct") for r in ok):
            c = next(r["record"] for r in ok if not r["record"].get("correct"))
            print(f"  ! {p['problem']}: not correct in the warm-up (tier {c.get('tier')}, "
                  f"{c.get('failure_stage')}: {c.get('message', '')[:200]})", flush=True)
        marker[p["problem"]] = {"hash": problem_hash(p), "eval_s": eval_s[p["problem"]]}
    write_marker(ctx, marker)
    figures.update({"wall_s": wall, "answered": sum(1 for r in results if r["record"]), "requests": len(results)})
    print(f"warm-up: {figures['answered']}/{len(results)} answered in {wall:.1f} s", flush=True)
    return eval_s, failed, figures


def run_batch(ctx, root, gpus, items, tag, budget_s, extra=()):
    """A fresh service, every item at once, its figures; (results, summary, cut)."""
    svc = ctx.service(root, gpus, tag, extra)
    svc.start()
    before = svc.metrics()
    cut = {"cut": False, "after": []}

    def stop_at_deadline():
        cut["cut"] = True
        cut["after"] = svc.metrics()  # its counters, before the service goes with them
        svc.stop()

    with Monitor(svc, gpus=gpus.split(",")) as mon:
        results, wall = send_all(svc.url, items, time.monotonic() + budget_s, on_deadline=stop_at_deadline)
        after = cut["after"] if cut["cut"] else svc.metrics()
    summary = summarize(results, wall, before, after, mon)
    svc.stop()
    return results, summary, cut["cut"]


def read_run(path, what):
    """An earlier part's --out JSON; None, said on stderr naming `what` and the file, when it cannot be read."""
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except (OSError, ValueError) as e:
        print(f"mixed_batch {what} {path}: {e}", file=sys.stderr)
        return None


def cmd_orders(a):
    ctx = Context(a)
    problems, missing = find_problems(a.solutions, a.kernelbench)
    for m in missing:
        print(f"  (no KernelBench problem for {m})")
    if a.problems:
        want = set(a.problems.split(","))
        problems = [p for p in problems if p["problem"] in want]
    if len(problems) < a.min_problems:
        print(f"mixed_batch orders: {len(problems)} problems with a solution under {', '.join(a.solutions)} and a "
              f"file under {a.kernelbench}: at least {a.min_problems} needed (--min-problems)", file=sys.stderr)
        return 2
    n_gpus = len(a.gpus.split(","))
    print(f"orders: {len(problems)} problems, {a.requests} requests each, GPUs {a.gpus}, budget {a.budget_s:.0f} s",
          flush=True)
    figures = {"part": "orders", "args": vars(a), "problems": problems, "skipped": ctx.skipped}
    try:
        if a.no_warmup:
            eval_s, failed, wfig = {}, [], {"skipped": True}
            ctx.skipped.add("the warm-up (--no-warmup): the orders may pay for compiles and baselines")
        else:
            eval_s, failed, wfig = warm_up(ctx, problems, a.kernelbench, a.gpus, a.warmup_share)
    except RuntimeError as e:
        print(f"mixed_batch orders: {e}", file=sys.stderr)
        return 3
    figures["warmup"] = wfig
    problems = [p for p in problems if p["problem"] not in failed]
    per_eval = [eval_s.get(p["problem"]) or a.eval_guess_s for p in problems]
    available = ctx.left() - 5
    n_orders = 2 if a.order == "both" else 1
    requests, rounds, est = fit_budget(a.requests, a.rounds, per_eval, n_gpus, a.start_guess_s, available,
                                       n_orders=n_orders)
    if a.no_fit:
        # The warm-up's figures can overstate a warm evaluation (a problem evicted between its two
        # requests pays its start again): R as asked, each order its share of what is left.
        requests, rounds = a.requests, a.rounds
    if rounds < a.rounds:
        which = f"round {a.rounds}" if rounds + 1 == a.rounds else f"rounds {rounds + 1}-{a.rounds}"
        ctx.skipped.add(f"{which}: {a.rounds} rounds of both orders do not fit the {available:.0f} s left "
                        f"(about {est:.0f} s an order)")
    if requests < a.requests:
        ctx.skipped.add(f"requests per problem cut from {a.requests} to {requests} to fit the {available:.0f} s left "
                        f"(about {est:.0f} s an order)")
    items = build_requests(problems, requests, a.preset)
    orders = []
    plan = order_plan(rounds, a.order)
    for k, (order, rnd) in enumerate(plan):
        left = ctx.left() - 5
        share = left / (len(plan) - k)
        if share < min(est, 30):
            ctx.skipped.add(f"{order} (round {rnd}) and what follows: {left:.0f} s left")
            break
        arranged = arrange(items, order, a.seed + rnd - 1)
        print(f"{order} (round {rnd}): {len(arranged)} requests at once to a fresh service on GPUs {a.gpus} "
              f"(at most {share:.0f} s)", flush=True)
        try:
            results, summary, cut = run_batch(ctx, a.kernelbench, a.gpus, arranged, f"{order}{rnd}", share)
        except RuntimeError as e:
            print(f"mixed_batch orders: {e}", file=sys.stderr)
            return 3
        if cut:
            ctx.skipped.add(f"{order} (round {rnd}) was cut at its {share:.0f} s: "
                            f"{summary['lost']} requests unanswered")
        for r in results:
            r["order"], r["round"] = order, rnd
        orders.append({"order": order, "round": rnd, "requests_per_problem": requests, "cut": cut,
                       "summary": summary, "records": results})
        s = summary
        print(f"  {s['answered']}/{s['requests']} answered in {s['wall_s']:.1f} s: {fmt(s['throughput_per_s'])}/s, "
              f"p50 {fmt(s['p50_s'])} s, p99 {fmt(s['p99_s'])} s; serve.problem {counts_text(s['serve_problem'])}; "
              f"problem_state {counts_text(s['problem_state'])}; GPU busy {busy_text(s['gpu_busy_share'])}",
              flush=True)
    earlier = []
    if a.with_file:
        # The other order, run before on the same machine with the same problems and R (--order):
        # its rows join this run's table and ratio.
        prev = read_run(a.with_file, "orders: --with")
        if prev is None:
            return 2
        same = sorted(p["problem"] for p in prev.get("problems", [])) == sorted(p["problem"] for p in problems)
        if not same or prev.get("requests_per_problem") != requests:
            print(f"mixed_batch orders: --with {a.with_file}: other problems or R "
                  f"({prev.get('requests_per_problem')} against {requests}): not compared", file=sys.stderr)
        else:
            earlier = [dict(o, earlier=True) for o in prev.get("orders", [])]
    ratio = ratio_of(earlier + orders)
    figures.update({"requests_per_problem": requests, "rounds": rounds, "orders": orders,
                    "ratio_shuffled_sorted": ratio, "elapsed_s": time.monotonic() - ctx.t0})
    print(f"\norders: {len(problems)} problems x {requests} requests, GPUs {a.gpus}, preset {a.preset}")
    if earlier:
        print(f"(rows marked * from {a.with_file}: the same problems and R, run before on this machine)")
    print(order_rows(earlier + orders))
    lost = sum(o["summary"]["lost"] for o in orders)
    met = ratio is not None and ratio >= 0.9
    print(f"shuffled/sorted throughput: {fmt(ratio, 3)} (goal >= 0.9: {'met' if met else 'NOT met'}); "
          f"lost {lost}; correct {sum(o['summary']['correct'] for o in orders)}/"
          f"{sum(o['summary']['answered'] for o in orders)}")
    for o in orders:
        for ex in o["summary"]["lost_examples"][:3]:
            print(f"  lost ({o['order']} {o['round']}): {ex}")
    for s in ctx.skipped:
        print(f"  skipped: {s}")
    write_out(a.out, figures)
    return 0 if met and lost == 0 else 1


def sequential(svc, ctx, problem_of, letter, source_of, tag, n):
    """One request, answered before anything else is sent: (compact record or None, latency, error)."""
    p = problem_of[letter]
    body = request_body(p["problem"], source_of(p), kind_of(p["solution"]),
                        f"{p['problem'].split('/', 1)[1]}-{tag}{n:02d}.cu", ctx.a.preset)
    t = time.monotonic()
    status, payload, err = http_call(svc.url, "POST", "/v1/evaluate", body, timeout=max(30.0, ctx.left() + 60))
    lat = time.monotonic() - t
    if status == 200 and isinstance(payload, dict) and "error" not in payload:
        return compact(payload), lat, None
    return None, lat, f"{status} {error_text(status, payload, err)}"


def evaluated(c):
    return ((c or {}).get("serve") or {}).get("evaluated_s")


def cmd_switch(a):
    ctx = Context(a)
    problems, _ = find_problems(a.solutions, a.kernelbench)
    by_name = {p["problem"]: p for p in problems}
    try:
        plan = switch_plan(a.pattern)
        letters = sorted({c for c, _ in plan})
        if "D" in letters or "E" in letters:
            raise ValueError("--pattern uses A, B, C, ...: D and E are the new problems (announced, not announced)")
        wanted = a.switch_problems.split(",") if a.switch_problems else SWITCH_DEFAULTS
        # A, B, C... in the order given; D and E the next two.
        order = letters + ["D", "E"]
        assign = pick_switch_problems([p["problem"] for p in problems], wanted, order)
    except ValueError as e:
        print(f"mixed_batch switch: {e}", file=sys.stderr)
        return 2
    problem_of = {k: by_name[v] for k, v in assign.items()}
    sources = {}

    def source_of(p):
        if p["solution"] not in sources:
            with open(p["solution"], encoding="utf-8") as f:
                sources[p["solution"]] = f.read()
        return sources[p["solution"]]

    print(f"switch: GPUs {a.gpus}, " + ", ".join(f"{k} = {v}" for k, v in assign.items()), flush=True)
    figures = {"part": "switch", "args": vars(a), "problems": assign, "skipped": ctx.skipped}
    try:
        if not a.no_warmup:
            _, failed, wfig = warm_up(ctx, list(problem_of.values()), a.kernelbench, a.gpus, 0.5)
            figures["warmup"] = wfig
            if failed:
                print(f"mixed_batch switch: the warm-up failed for {', '.join(failed)}", file=sys.stderr)
                return 3
        svc = ctx.service(a.kernelbench, a.gpus, "switch")
        svc.start()
    except RuntimeError as e:
        print(f"mixed_batch switch: {e}", file=sys.stderr)
        return 3
    seq, errors = [], []
    try:
        for n, (letter, what) in enumerate(plan):
            if ctx.left() < 35:  # what is left is D's and E's
                ctx.skipped.add(f"the pattern from request {n + 1} of {len(plan)} on ({ctx.left():.0f} s left)")
                break
            c, lat, err = sequential(svc, ctx, problem_of, letter, source_of, "s", n)
            seq.append({"n": n, "letter": letter, "what": what, "latency_s": lat, "record": c, "error": err})
            if err:
                errors.append(f"{letter} #{n}: {err}")
            print(f"  {n:2d} {letter} {what:6} evaluated {fmt(evaluated(c), 3)} s, latency {lat:.3f} s, "
                  f"{(c or {}).get('problem_state') or '-'}" + (f"  ! {err}" if err else ""), flush=True)
        # D: announced while C is evaluated ([C, C, D] as one batch), then again alone.
        announced = {}
        if ctx.left() > 15:
            reqs = []
            for k, letter in enumerate(("C", "C", "D")):
                p = problem_of[letter]
                reqs.append(request_body(p["problem"], source_of(p), kind_of(p["solution"]),
                                         f"{p['problem'].split('/', 1)[1]}-b{k:02d}.cu", a.preset))
            t = time.monotonic()
            status, payload, err = http_call(svc.url, "POST", "/v1/evaluate_batch", {"requests": reqs},
                                             timeout=max(30.0, ctx.left() + 60))
            lat = time.monotonic() - t
            results = payload.get("results") if status == 200 and isinstance(payload, dict) else None
            if not isinstance(results, list) or len(results) != 3:
                errors.append(f"[C, C, D] batch: {status} {error_text(status, payload, err)}")
            else:
                recs = [compact(r) if isinstance(r, dict) and "error" not in r else None for r in results]
                announced["batch"] = {"records": recs, "latency_s": lat}
                # The worker takes the first request whose build is over, so C or D may go first; the
                # one evaluated second was announced while the other was: that is the first visit
                # measured (against C's repeat in the batch, or D's sent after it).
                queued = [((r or {}).get("serve") or {}).get("queued_s") or 0.0 for r in recs]
                later = "C" if queued[0] > queued[2] else "D"
                announced["problem"] = later
                first = recs[0] if later == "C" else recs[2]
                announced["first"] = {"record": first, "error": None if first else str(results[2])[:300]}
                if first is None:
                    errors.append(f"{later} in the batch: {str(results[0 if later == 'C' else 2])[:300]}")
                if later == "C":
                    announced["repeat"] = {"record": recs[1], "latency_s": None, "error": None}
                else:
                    c, lat2, err2 = sequential(svc, ctx, problem_of, "D", source_of, "d", 1)
                    announced["repeat"] = {"record": c, "latency_s": lat2, "error": err2}
                    if err2:
                        errors.append(f"D repeat: {err2}")
        else:
            ctx.skipped.add(f"D, the new problem announced ahead ({ctx.left():.0f} s left)")
        # E: a new problem sent alone to the idle service (not announced), then again.
        unannounced = {}
        if ctx.left() > 10:
            for k, tag in ((0, "first"), (1, "repeat")):
                c, lat, err = sequential(svc, ctx, problem_of, "E", source_of, "e", k)
                unannounced[tag] = {"record": c, "latency_s": lat, "error": err}
                if err:
                    errors.append(f"E {tag}: {err}")
        else:
            ctx.skipped.add(f"E, the new problem not announced ahead ({ctx.left():.0f} s left)")
        after = svc.metrics()
    finally:
        svc.stop()

    # Repeats against switches back.
    repeats = collections.defaultdict(list)
    for s in seq:
        if s["what"] == "repeat" and evaluated(s["record"]) is not None:
            repeats[s["letter"]].append(evaluated(s["record"]))
    med = {k: statistics.median(v) for k, v in repeats.items()}
    backs = []
    for s in seq:
        if s["what"] == "back" and evaluated(s["record"]) is not None and s["letter"] in med:
            backs.append({"n": s["n"], "letter": s["letter"], "evaluated_s": evaluated(s["record"]),
                          "repeat_median_s": med[s["letter"]], "extra_s": evaluated(s["record"]) - med[s["letter"]],
                          "problem_state": s["record"].get("problem_state"),
                          "serve_problem": (s["record"].get("serve") or {}).get("problem")})
    extras = [b["extra_s"] for b in backs]

    def visit(d):
        first, rep = (d.get("first") or {}).get("record"), (d.get("repeat") or {}).get("record")
        if evaluated(first) is None or evaluated(rep) is None:
            return None
        return {"first_s": evaluated(first), "repeat_s": evaluated(rep), "extra_s": evaluated(first) - evaluated(rep),
                "problem_state": first.get("problem_state"), "problem_wait_s": first.get("problem_wait_s"),
                "serve_problem": (first.get("serve") or {}).get("problem")}

    d_fig, e_fig = visit(announced), visit(unannounced)
    figures.update({"sequence": seq, "repeat_median_s": med, "switch_backs": backs,
                    "switch_back_extra_median_s": statistics.median(extras) if extras else None,
                    "switch_back_extra_max_s": max(extras) if extras else None,
                    "announced": announced, "announced_figures": d_fig,
                    "unannounced": unannounced, "unannounced_figures": e_fig,
                    "problem_starts": metric_by(after, "kagent_problem_starts_total", "how"),
                    "evictions": metric_total(after, "kagent_problem_evictions_total"), "errors": errors,
                    "elapsed_s": time.monotonic() - ctx.t0})
    back_met = bool(extras) and statistics.median(extras) <= 0.2
    d_met = d_fig is not None and d_fig["extra_s"] <= 1.0
    print(f"\nswitch: GPUs {a.gpus}, pattern {a.pattern}, preset {a.preset}")
    rows = [[k, assign[k], len(repeats.get(k, [])), fmt(med.get(k), 3)] for k in letters]
    print(table(["problem", "name", "repeats", "median s"], rows))
    rows = [[f"{b['letter']} (#{b['n']})", fmt(b["evaluated_s"], 3), fmt(b["repeat_median_s"], 3),
             fmt(b["extra_s"], 3), b["problem_state"] or "-", b["serve_problem"] or "-"] for b in backs]
    print(table(["switch back", "evaluated s", "repeat s", "extra s", "problem_state", "serve.problem"], rows))
    print(f"switch back: median extra {fmt(figures['switch_back_extra_median_s'], 3)} s, max "
          f"{fmt(figures['switch_back_extra_max_s'], 3)} s (goal <= 0.2 s: {'met' if back_met else 'NOT met'})")
    rows = []
    for label, f in ((f"{announced.get('problem', 'D')} announced", d_fig), ("E not announced", e_fig)):
        if f:
            rows.append([label, fmt(f["first_s"], 3), fmt(f["repeat_s"], 3), fmt(f["extra_s"], 3),
                         f["problem_state"] or "-", fmt(f["problem_wait_s"], 3), f["serve_problem"] or "-"])
    if rows:
        print(table(["first visit", "evaluated s", "repeat s", "extra s", "problem_state", "wait s", "serve.problem"],
                    rows))
    print(f"{announced.get('problem', 'D')} announced ahead: extra {fmt(d_fig['extra_s'] if d_fig else None, 3)} s "
          f"over a repeat "
          f"(goal <= 1 s: {'met' if d_met else 'NOT met'}); starts {counts_text(figures['problem_starts'])}")
    for e in errors:
        print(f"  error: {e}")
    for s in ctx.skipped:
        print(f"  skipped: {s}")
    write_out(a.out, figures)
    return 0 if back_met and d_met and not errors else 1


def eviction_root(work, ballast_files, relu_file):
    """A problems root holding copies of the ballast problems and of level1/19_ReLU (a service reads
    problems under one root, and symlinks out of it are refused)."""
    root = os.path.join(work, "eviction-root")
    os.makedirs(os.path.join(root, "ballast"), exist_ok=True)
    os.makedirs(os.path.join(root, "level1"), exist_ok=True)
    names = []
    for f in ballast_files:
        shutil.copyfile(f, os.path.join(root, "ballast", os.path.basename(f)))
        names.append("ballast/" + os.path.basename(f)[:-3])
    shutil.copyfile(relu_file, os.path.join(root, "level1", os.path.basename(relu_file)))
    names.append(RELU_PROBLEM)
    return root, names


def cmd_eviction(a):
    ctx = Context(a)
    ballast = sorted(glob.glob(os.path.join(a.ballast_dir, "*.py")))
    relu = os.path.join(a.kernelbench, RELU_PROBLEM + ".py")
    if not ballast or not os.path.isfile(relu) or not os.path.isfile(a.solution):
        print(f"mixed_batch eviction: needs ballast problems in {a.ballast_dir}, {relu} and {a.solution}",
              file=sys.stderr)
        return 2
    root, names = eviction_root(ctx.work, ballast, relu)
    problems = [{"problem": n, "solution": os.path.abspath(a.solution), "file": os.path.join(root, n + ".py")}
                for n in names]
    items = arrange(build_requests(problems, a.requests_each, a.preset), "shuffled", a.seed)
    extra = ["--warm-problems", str(a.warm_problems)]
    if a.warm_memory is not None:
        extra += ["--warm-memory", str(a.warm_memory)]
    print(f"eviction: {len(names)} problems ({', '.join(names)}) x {a.requests_each}, shuffled, at once, GPUs "
          f"{a.gpus}, {' '.join(extra)} (at most {ctx.left() - 10:.0f} s)", flush=True)
    try:
        results, summary, cut = run_batch(ctx, root, a.gpus, items, "eviction", ctx.left() - 10, extra)
    except RuntimeError as e:
        print(f"mixed_batch eviction: {e}", file=sys.stderr)
        return 3
    if cut:
        ctx.skipped.add(f"the batch was cut at the budget: {summary['lost']} requests unanswered")
    oom = [r for r in results if memory_failure(r["record"])]
    per_problem = {}
    for n in names:
        rs = [r for r in results if r["problem"] == n]
        recs = [r["record"] for r in rs if r["record"]]
        per_problem[n] = {"requests": len(rs), "answered": len(recs), "correct": sum(1 for c in recs if c["correct"]),
                          "tiers": dict(collections.Counter(str(c.get("tier")) for c in recs)),
                          "evaluated_s_p50": percentile([evaluated(c) for c in recs if evaluated(c) is not None], 50),
                          "problem_state": dict(collections.Counter(c.get("problem_state") or "-" for c in recs))}
    s = summary
    # Cut at the budget, the service was stopped: what it then answered 503 (or not at all) is not lost by it.
    refused = [r for r in results if not r["record"] and not (cut and r["status"] in (0, 503))]
    unanswered = sum(1 for r in results if not r["record"]) - len(refused)
    met = s["evictions"] > 0 and not oom and not refused
    figures = {"part": "eviction", "args": vars(a), "problems": names, "summary": s, "per_problem": per_problem,
               "lost_by_the_service": len(refused), "unanswered_at_the_budget": unanswered, "goal_met": met,
               "memory_failures": [{"name": r["name"], "record": r["record"]} for r in oom], "records": results,
               "skipped": ctx.skipped, "elapsed_s": time.monotonic() - ctx.t0}
    print(f"\neviction: {len(names)} problems x {a.requests_each}, GPUs {a.gpus}, {' '.join(extra)}")
    rows = [[n, f["requests"], f["answered"], f["correct"], counts_text(f["tiers"]), f["evaluated_s_p50"],
             counts_text(f["problem_state"])] for n, f in per_problem.items()]
    print(table(["problem", "requests", "answered", "correct", "tiers", "p50 evaluated s", "problem_state"], rows))
    mem = s.get("max_gpu_memory_mib") or {}
    tot = s.get("gpu_memory_total_mib") or {}
    lost_text = f" (by status {counts_text(s['lost_by_status'])})" if s["lost"] else ""
    mem_text = " ".join(f"g{g}:{mem[g] / 1024:.1f}/{tot.get(g, 0) / 1024:.1f} GiB" for g in sorted(mem)) or "-"
    print(f"answered {s['answered']}/{s['requests']} in {s['wall_s']:.1f} s, lost {s['lost']}{lost_text}; "
          f"out-of-memory or memory failures {len(oom)}; evictions {int(s['evictions'])}; starts "
          f"{counts_text(s['problem_starts'])}; most warm {counts_text(s.get('max_warm_problems') or {})} "
          f"holding at most " + (" ".join(f"g{g}:{v:.1f}" for g, v in sorted((s.get('max_warm_gpu_gib') or {}).items()))
                                 or "-") + f" GiB; GPU memory peak {mem_text}")
    print(f"goal (evictions > 0, no out-of-memory verdict, nothing lost): {'met' if met else 'NOT met'}"
          + (f" ({unanswered} requests not answered when the budget ran out)" if unanswered else ""))
    for ex in s["lost_examples"][:5]:
        print(f"  lost: {ex}")
    for r in oom[:5]:
        print(f"  memory: {r['name']}: {r['record'].get('failure_stage')}: {r['record'].get('message', '')[:200]}")
    for x in ctx.skipped:
        print(f"  skipped: {x}")
    write_out(a.out, figures)
    return 0 if met else 1


def cmd_verdicts(a):
    ctx = Context(a)
    data = read_run(a.from_file, "verdicts: --from")
    if data is None:
        return 2
    files = {p["problem"]: p["file"] for p in data.get("problems", [])}
    if a.kernelbench:
        files = {p: os.path.join(a.kernelbench, p + ".py") for p in files}
    served = [r for o in data.get("orders", []) for r in o.get("records", []) if r.get("record")]
    if not served:
        print(f"mixed_batch verdicts: {a.from_file} holds no answered record", file=sys.stderr)
        return 2
    jobs = collections.OrderedDict()  # problem -> solutions
    for r in served:
        jobs.setdefault(r["problem"], [])
        if r["solution"] not in jobs[r["problem"]]:
            jobs[r["problem"]].append(r["solution"])
    pending = collections.deque(sorted(jobs, key=natural_key))
    gpus = a.gpus.split(",")
    alone, runs, lock = {}, [], threading.Lock()
    durations = []
    print(f"verdicts: {len(served)} served records of {len(jobs)} problems; kagent eval alone, one process per "
          f"GPU ({a.gpus}), budget {a.budget_s:.0f} s", flush=True)

    def worker(gpu):
        while True:
            with lock:
                if not pending:
                    return
                guess = statistics.median(durations) if durations else a.eval_guess_s
                if ctx.left() < guess * 1.2 + 5:
                    while pending:
                        p = pending.popleft()
                        ctx.skipped.add(f"{p}: kagent eval alone not run ({ctx.left():.0f} s left, about "
                                        f"{guess:.0f} s each)")
                    return
                problem = pending.popleft()
            sols = jobs[problem]
            cmd = [a.kagent, "eval", *sols, "--op", files[problem], "--preset", a.preset, "--json", "--gpu", gpu]
            t = time.monotonic()
            try:
                p = subprocess.run(cmd, capture_output=True, text=True, env=ctx.env,
                                   timeout=max(10.0, min(a.eval_timeout_s, ctx.left())))
                out, err, rc = p.stdout, p.stderr, p.returncode
            except subprocess.TimeoutExpired as e:
                out = e.stdout.decode() if isinstance(e.stdout, bytes) else (e.stdout or "")
                err, rc = "timed out", None
            dt = time.monotonic() - t
            recs = match_records(parse_eval_output(out), sols)
            with lock:
                durations.append(dt)
                runs.append({"problem": problem, "gpu": gpu, "exit": rc, "wall_s": dt, "records": len(recs),
                             "stderr": (err or "")[-600:] if not recs else ""})
                for sol, rec in recs.items():
                    alone[(sol, problem)] = compact(rec)
            c = next(iter(recs.values()), None)
            print(f"  {problem} on GPU {gpu}: exit {rc}, {dt:.1f} s, tier {c.get('tier') if c else '-'}"
                  + ("" if recs else f"  ! no record: {(err or '')[-300:]}"), flush=True)

    threads = [threading.Thread(target=worker, args=(g,)) for g in gpus]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    cmp = compare_verdicts(served, alone)
    figures = {"part": "verdicts", "args": vars(a), "from": a.from_file, "runs": runs, "comparison": cmp,
               "alone": [{"solution": k[0], "problem": k[1], "record": v} for k, v in alone.items()],
               "skipped": ctx.skipped, "elapsed_s": time.monotonic() - ctx.t0}
    n = cmp["compared"]
    print(f"\nverdicts: {n} served records of {len({k[1] for k in alone})} problems against kagent eval alone "
          f"(--preset {a.preset}); {len(served) - n} not compared")
    all_equal = n > 0 and cmp["correct_equal"] == n
    print(f"correct/incorrect equal: {cmp['correct_equal']}/{n} ({'all' if all_equal else 'NOT all'})"
          f"; tiers equal: {cmp['tiers_equal']}/{n}; tier differences {len(cmp['tier_diffs'])}, of them within noise "
          f"{cmp['tier_diffs_within_noise']}")
    grouped = collections.OrderedDict()
    for d in cmp["tier_diffs"]:
        grouped.setdefault((d["problem"], d["served_tier"], d["alone_tier"]), []).append(d)
    rows = []
    for (problem, st, at), ds in grouped.items():
        se = [d["served_speedup_vs_eager"] for d in ds if d["served_speedup_vs_eager"] is not None]
        sc = [d["served_speedup_vs_compile"] for d in ds if d["served_speedup_vs_compile"] is not None]
        rows.append([problem, len(ds), st, at, f"{fmt(min(se) if se else None, 3)}-{fmt(max(se) if se else None, 3)}",
                     fmt(ds[0]["alone_speedup_vs_eager"], 3),
                     f"{fmt(min(sc) if sc else None, 3)}-{fmt(max(sc) if sc else None, 3)}",
                     fmt(ds[0]["alone_speedup_vs_compile"], 3),
                     f"{sum(1 for d in ds if d['within_noise'])}/{len(ds)}"])
    if rows:
        print(table(["problem", "n", "served tier", "alone tier", "served x eager", "alone x eager",
                     "served x compile", "alone x compile", "within noise"], rows))
    for d in cmp["correctness_diffs"][:10]:
        print(f"  CORRECTNESS DIFFERS: {d['problem']} {d['name']}: served correct={d['served'].get('correct')} "
              f"({d['served'].get('failure_stage')}: {d['served'].get('message', '')[:120]}), alone "
              f"correct={d['alone'].get('correct')} ({d['alone'].get('failure_stage')})")
    for s in ctx.skipped:
        print(f"  skipped: {s}")
    write_out(a.out, figures)
    ok = n > 0 and cmp["correct_equal"] == n and all(d["within_noise"] for d in cmp["tier_diffs"])
    return 0 if ok else 1


def write_out(path, figures):
    if not path:
        return
    with open(path, "w", encoding="utf-8") as f:
        json.dump(figures, f, indent=1, default=str)
    print(f"(figures in {path})")


def parser():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    sub = ap.add_subparsers(dest="part", required=True)

    def common(p, gpus, budget, guess):
        p.add_argument("--kagent", default=os.environ.get("KAGENT_BIN", os.path.join(ROOT, "build", "kagent")))
        p.add_argument("--gpus", default=gpus, help=f"GPU indices (default {gpus})")
        p.add_argument("--budget-s", type=float, default=budget,
                       help=f"seconds for the whole part (default {budget:g})")
        p.add_argument("--preset", default="training", help="measurement preset of the service and requests")
        p.add_argument("--out", help="write the figures and records as JSON here")
        p.add_argument("--work", help="folder for the services' logs (default: a new temporary folder)")
        p.add_argument("--cache-dir", help="KAGENT_CACHE_DIR for every kagent started (default: as set)")
        p.add_argument("--eval-guess-s", type=float, default=guess,
                       help=f"seconds of {'an evaluation' if guess < 10 else 'a kagent eval process'}, where nothing "
                            f"measured says (default {guess:g})")

    def serving(p):
        p.add_argument("--kernelbench", default=os.environ.get("KAGENT_KERNELBENCH_DIR",
                                                               os.path.join(os.path.dirname(ROOT), "shared",
                                                                            "kernelbench")))
        p.add_argument("--solutions", action="append", default=None,
                       help="folder of levelN/NAME.cu solutions (repeatable; default examples/kernelbench)")
        p.add_argument("--queue", type=int, default=4096, help="the service's --queue")
        p.add_argument("--serve-args", default="", help="more flags for kagent serve (one string)")
        p.add_argument("--seed", type=int, default=1)
        p.add_argument("--no-warmup", action="store_true", help="skip the warm-up service")

    p = sub.add_parser("orders", help="shuffled against sorted, all at once, on several GPUs")
    common(p, "0,1", 420.0, 1.0)
    serving(p)
    p.add_argument("--requests", type=int, default=16, help="requests per problem (R)")
    p.add_argument("--rounds", type=int, default=1, help="rounds of the two orders, in alternation")
    p.add_argument("--min-problems", type=int, default=24)
    p.add_argument("--problems", help="only these problems (comma-separated ids, level1/19_ReLU)")
    p.add_argument("--warmup-share", type=float, default=0.45, help="of the budget left, the warm-up's at most")
    p.add_argument("--start-guess-s", type=float, default=3.0, help="a problem's start, for sizing R")
    p.add_argument("--order", choices=("both", "shuffled", "sorted"), default="both",
                   help="run both orders, or one (the other from --with)")
    p.add_argument("--with", dest="with_file", help="an earlier --out of the other order, for the table and ratio")
    p.add_argument("--no-fit", action="store_true",
                   help="keep --requests and --rounds as given instead of fitting them to the budget")

    p = sub.add_parser("switch", help="switching costs on one GPU, one request at a time")
    common(p, "0", 120.0, 1.0)
    serving(p)
    p.add_argument("--pattern", default="AAAABBBBAAAACCCCBBBBAAAACCCC")
    p.add_argument("--switch-problems", help="problem ids for A, B, C, ..., D, E (comma-separated)")

    p = sub.add_parser("eviction", help="ballast problems that do not fit together, all at once")
    common(p, "0", 180.0, 1.0)
    serving(p)
    p.add_argument("--ballast-dir", default=BALLAST_DIR)
    p.add_argument("--solution", default=RELU_SOLUTION, help="the plan sent for every problem")
    p.add_argument("--requests-each", type=int, default=8)
    p.add_argument("--warm-problems", type=int, default=16)
    p.add_argument("--warm-memory", type=float, default=None)

    p = sub.add_parser("verdicts", help="an orders run's records against kagent eval alone")
    common(p, "0,1", 240.0, 20.0)
    p.add_argument("--from", dest="from_file", required=True, help="the JSON of an orders run (--out)")
    p.add_argument("--kernelbench", default=None, help="where the problems are (default: as the orders run had them)")
    p.add_argument("--eval-timeout-s", type=float, default=300.0)
    return ap


def main(argv=None):
    a = parser().parse_args(argv)
    # A SIGTERM (a `timeout` over this script) ends it through exit, so that its services are stopped.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    if getattr(a, "solutions", None) is None and hasattr(a, "solutions"):
        a.solutions = [DEFAULT_SOLUTIONS]
    if hasattr(a, "solutions"):
        a.solutions = [os.path.abspath(s) for s in a.solutions]
    if getattr(a, "kernelbench", None):
        a.kernelbench = os.path.abspath(a.kernelbench)
    if not (os.path.isfile(a.kagent) and os.access(a.kagent, os.X_OK)):
        print(f"mixed_batch: --kagent {a.kagent} is not an executable", file=sys.stderr)
        return 2
    if a.part != "verdicts" and not os.path.isdir(a.kernelbench):
        print(f"mixed_batch: --kernelbench {a.kernelbench} is not a folder", file=sys.stderr)
        return 2
    return {"orders": cmd_orders, "switch": cmd_switch, "eviction": cmd_eviction, "verdicts": cmd_verdicts}[a.part](a)


if __name__ == "__main__":
    sys.exit(main())
