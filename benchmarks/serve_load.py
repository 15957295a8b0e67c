#!/usr/bin/env python3
"""Load on `kagent serve`: C clients send N evaluations (honest and cheating candidates of
examples/vector_add mixed) and the answers are checked against `kagent eval` on the same
candidates. Prints p50/p99 latency, throughput, requests lost and verdicts that differ; with
--kill-restart the service is killed with SIGKILL halfway (clients must see connection errors, not
wrong answers; they try the same request again), restarted on the same port, and must serve the
rest; a last `kagent eval` checks that the compile cache on disk still works.

    python3 benchmarks/serve_load.py --kagent build-gpu/kagent --clients 4 --requests 1000 --kill-restart

A verdict is the outcome by results.jsonl's names (correct, incorrect, compile_error, crash,
timeout), which must agree; the failure stage is compared too and its differences counted apart
(a racing candidate is caught in the trials one time and in a re-check another); the tier of a
correct candidate (2 or 3) depends on its speed and is reported apart. Needs a GPU; standard library and python/kagent_client only. --preset training
(`kagent eval --preset`) is the measurement RL trainers use: both sides are judged under it.
"""
import argparse
import json
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "python"))
from kagent_client import Client, KagentError  # noqa: E402

K = os.path.join(ROOT, "tests", "gpu", "kernels")
V = os.path.join(ROOT, "examples", "vector_add")
# (file, weight): honest candidates of differing speed, and every failing kind.
MIX = [
    (os.path.join(V, "cand_naive.cu"), 6), (os.path.join(V, "cand_vec4.cu"), 6),
    (os.path.join(K, "exact_writes.cu"), 3), (os.path.join(K, "printf_add.cu"), 2),
    (os.path.join(K, "fma_chain.cu"), 2),
    (os.path.join(V, "cand_compile_error.cu"), 1), (os.path.join(K, "wrong.cu"), 1),
    (os.path.join(K, "half_output.cu"), 1), (os.path.join(K, "zero_inputs.cu"), 1),
    (os.path.join(K, "illegal_address.cu"), 1), (os.path.join(K, "trap.cu"), 1),
    (os.path.join(K, "race.cu"), 1), (os.path.join(K, "wrong_after_warmup.cu"), 1),
    (os.path.join(K, "one_past_end.cu"), 1), (os.path.join(K, "past_end_after_warmup.cu"), 1),
    (os.path.join(K, "endless_loop.cu"), 1),
]
HANG = os.path.join(K, "endless_loop.cu")
HANG_TIMEOUT_S = 3  # the hanging candidate's limit (killed then): its cost per request
PROBLEM = "vector_add"  # under --problems-root examples/


def verdict(record):
    """(status, failure stage) of a `kagent eval --json` record, by bench's rules."""
    if not record.get("compile", {}).get("ok", False):
        return ("compile_error", "-")
    o = record.get("outcome", {})
    if o.get("correct"):
        return ("correct", "-")
    stage = o.get("failure_stage", "none")
    return ({"timeout": "timeout", "crash": "crash"}.get(stage, "incorrect"), stage)


def timeout_of(path, timeout_s):
    return HANG_TIMEOUT_S if path == HANG else timeout_s


def reference_verdicts(kagent, timeout_s, env, preset):
    out = {}
    for path, _ in MIX:
        p = subprocess.run([kagent, "eval", path, "--op", os.path.join(V, "op.json"), "--json", "--timeout",
                            str(timeout_of(path, timeout_s)), "--preset", preset], capture_output=True, text=True,
                           env=env)
        try:
            rec = json.loads(p.stdout)
        except ValueError:
            sys.exit(f"kagent eval {path}: exit {p.returncode}, no record:\n{p.stderr[-2000:]}")
        out[path] = (verdict(rec), rec.get("tier"))
        print(f"  kagent eval {os.path.basename(path):28} tier {rec.get('tier'):>2}  {verdict(rec)}", flush=True)
    return out


def listening_ports(log_path):
    if not os.path.exists(log_path):
        return []
    with open(log_path) as f:
        return [int(p) for p in re.findall(r"listening on http://[^:]+:(\d+)", f.read())]


def start_service(kagent, port, env, log_path):
    before = len(listening_ports(log_path))
    log = open(log_path, "a")
    p = subprocess.Popen([kagent, "serve", "--problems-root", os.path.join(ROOT, "examples"), "--port", str(port),
                          "--queue", "256"], stdout=log, stderr=subprocess.STDOUT, env=env)
    for _ in range(600):
        ports = listening_ports(log_path)
        if len(ports) > before:  # this process's line, not an earlier one's
            return p, ports[-1]
        if p.poll() is not None:
            sys.exit(f"kagent serve ended (exit {p.returncode}); see {log_path}")
        time.sleep(0.1)
    sys.exit(f"kagent serve did not start; see {log_path}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--kagent", required=True)
    ap.add_argument("--clients", type=int, default=4)
    ap.add_argument("--requests", type=int, default=1000)
    ap.add_argument("--timeout", type=float, default=10, help="timeout_s of each evaluation (the hanging one: 3)")
    ap.add_argument("--kill-restart", action="store_true", help="SIGKILL the service halfway, restart it")
    ap.add_argument("--out", default=None, help="write the figures as JSON here")
    ap.add_argument("--preset", default="default", help="the measurement preset of every request and kagent eval")
    a = ap.parse_args()
    work = tempfile.mkdtemp(prefix="kagent-serve-load-")
    env = dict(os.environ)
    env.setdefault("KAGENT_CACHE_DIR", os.path.join(work, "cache"))
    print(f"reference verdicts ({len(MIX)} candidates, kagent eval one at a time):", flush=True)
    ref = reference_verdicts(a.kagent, a.timeout, env, a.preset)

    log_path = os.path.join(work, "serve.log")
    proc, port = start_service(a.kagent, 0, env, log_path)
    url = f"http://127.0.0.1:{port}"
    sources = {path: open(path).read() for path, _ in MIX}
    schedule = [path for path, w in MIX for _ in range(w)]
    lock = threading.Lock()
    state = {"next": 0, "connection_errors": 0}
    results = []  # (i, path, latency_s, verdict or None, tier, error)

    def client_loop():
        c = Client(url, rounds=1, timeout_s=a.timeout * 20 + 120)
        while True:
            with lock:
                i = state["next"]
                if i >= a.requests:
                    return
                state["next"] += 1
            path = schedule[i % len(schedule)]
            give_up = time.monotonic() + 300
            while True:
                t0 = time.monotonic()
                try:
                    rec = c.evaluate(sources[path], PROBLEM, "plan", name=os.path.basename(path),
                                     timeout_s=timeout_of(path, a.timeout), measure={"preset": a.preset})
                    item = (i, path, time.monotonic() - t0, verdict(rec), rec.get("tier"), None)
                    break
                except KagentError as e:
                    item = (i, path, time.monotonic() - t0, None, None, f"{e.status} {e.message}")
                    # The service down (killed): the client sees it, and sends the request again.
                    if e.status != 0 or not a.kill_restart or time.monotonic() > give_up:
                        break
                    with lock:
                        state["connection_errors"] += 1
                    time.sleep(0.5)
            with lock:
                results.append(item)

    def killer():
        while True:
            with lock:
                done = len(results)
            if done >= a.requests // 2:
                break
            time.sleep(0.05)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        time.sleep(2.0)  # clients meet the dead port meanwhile
        state["proc"], _ = start_service(a.kagent, port, env, log_path)

    t_start = time.monotonic()
    threads = [threading.Thread(target=client_loop) for _ in range(a.clients)]
    k = threading.Thread(target=killer) if a.kill_restart else None
    for t in threads + ([k] if k else []):
        t.start()
    for t in threads + ([k] if k else []):
        t.join()
    wall = time.monotonic() - t_start
    live = state.get("proc", proc)

    answered = [r for r in results if r[3] is not None]
    lost = [r for r in results if r[3] is None]
    # The outcome (correct, incorrect, compile_error, crash, timeout) must agree; the stage at which a
    # candidate that fails only sometimes (a race) is caught may differ between two evaluations.
    differ = [r for r in answered if r[3][0] != ref[r[1]][0][0]]
    stage_differ = [r for r in answered if r[3][0] == ref[r[1]][0][0] and r[3] != ref[r[1]][0]]
    tier_differ = [r for r in answered if r[3] == ("correct", "-") and r[4] != ref[r[1]][1]]
    lat = sorted(r[2] for r in answered)

    def pct(p):
        return lat[min(len(lat) - 1, int(round(p / 100 * (len(lat) - 1))))] if lat else float("nan")

    # After the run: the service still serves, and `kagent eval` still works on the cache on disk.
    after = Client(url, rounds=1).evaluate(sources[MIX[0][0]], PROBLEM, "plan")
    check = subprocess.run([a.kagent, "eval", MIX[0][0], "--op", os.path.join(V, "op.json")], capture_output=True,
                           text=True, env=env)
    live.send_signal(signal.SIGTERM)
    live.wait(timeout=60)
    figures = {
        "clients": a.clients, "requests": a.requests, "answered": len(answered), "wall_s": wall,
        "throughput_per_s": len(answered) / wall if wall > 0 else None,
        "p50_s": pct(50), "p99_s": pct(99), "mean_s": statistics.mean(lat) if lat else None,
        "lost": len(lost), "verdicts_different": len(differ), "stages_different": len(stage_differ),
        "tiers_different_correct": len(tier_differ),
        "connection_errors_during_kill": state["connection_errors"], "kill_restart": a.kill_restart,
        "after_run": {"service_tier": after.get("tier"), "kagent_eval_exit": check.returncode},
    }
    figures["preset"] = a.preset
    print(f"\n{a.clients} clients, {a.requests} requests ({len(MIX)} candidates mixed, preset {a.preset}) "
          f"in {wall:.1f} s")
    print(f"  answered {len(answered)}, throughput {figures['throughput_per_s']:.2f}/s, "
          f"latency p50 {pct(50):.3f} s, p99 {pct(99):.3f} s")
    print(f"  lost {len(lost)}, verdicts different from kagent eval {len(differ)}, "
          f"correct with another tier (speed) {len(tier_differ)}, same verdict caught at another stage "
          f"{len(stage_differ)}{' (' + ', '.join(sorted({os.path.basename(r[1]) for r in stage_differ})) + ')' if stage_differ else ''}")
    if a.kill_restart:
        print(f"  SIGKILL halfway: clients saw {state['connection_errors']} connection errors while it was down, "
              f"sent those requests again; restarted, it served the rest")
    print(f"  after the run: the service answers tier {after.get('tier')}, kagent eval exits {check.returncode}")
    for r in (lost + differ)[:20]:
        print(f"    #{r[0]} {os.path.basename(r[1])}: {r[5] or r[3]} (kagent eval: {ref[r[1]][0]})")
    if a.out:
        with open(a.out, "w") as f:
            json.dump(figures, f, indent=2)
    ok = not lost and not differ and after.get("tier", -1) > 0 and check.returncode == 0
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
