#!/usr/bin/env python3
"""Agent episodes as sessions of `kagent serve` under load, driven by a scripted policy as an RL
trainer drives them (docs/environment.md): --episodes (64) at once over --problems (8 KernelBench
problems with a solution under examples/kernelbench), each episode a thread that opens a session
and plays recorded turns:

    write_file a.cu (a version that does not compile)   compile a.cu (the error comes back)
    write_file a.cu (the solution)                      compile a.cu
    evaluate a.cu                                       read_file a.cu
    shell "ls -l; wc -c a.cu"                           write_file b.cu (the solution, one comment more)
    profile a.cu                                        evaluate b.cu
    list_files                                          finish a.cu

then closes it. One more episode on examples/vector_add submits the adversarial kernels of
tests/gpu/kernels (wrong results, half an output, out-of-bounds stores, a trap, inputs overwritten
after the checks, a race, wrong after warm-up) and evaluates each.

Reported: episodes per hour; each tool's step latency (p50, p99; the non-GPU tools against 50 ms and
500 ms); the GPU's busy share while evaluations waited (from /metrics and the queue depth sampled
every 0.2 s); every evaluation's verdict against `kagent eval` of the same source run alone after the
service stopped (correct equal on all, tiers equal or within noise); the adversarial kernels' tiers
in the episode against `kagent eval`'s (all -1).

    python3 benchmarks/session_episodes.py --kagent build/kagent --kernelbench ../shared/kernelbench \\
        --gpus 0 --episodes 64 --out episodes.json

Exit 0: every episode ran and every goal held; 1: a goal missed or an episode lost; 2: bad arguments;
3: the service could not run. Needs a GPU; standard library only.
"""
import argparse
import collections
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time

import mixed_batch as mb

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
SOLUTIONS = os.path.join(ROOT, "examples", "kernelbench", "level1")
DEFAULT_PROBLEMS = ["19_ReLU", "20_LeakyReLU", "21_Sigmoid", "22_Tanh", "23_Softmax", "25_Swish", "26_GELU_",
                    "36_RMSNorm_"]
ADVERSARIAL = ["wrong.cu", "half_output.cu", "illegal_address.cu", "trap.cu", "one_past_end.cu", "zero_inputs.cu",
               "race.cu", "wrong_after_warmup.cu", "scratch_past_end.cu"]
NON_GPU = ("write_file", "read_file", "list_files", "shell")
GOALS = {"p50_ms": 50.0, "p99_ms": 500.0, "busy_share": 0.90}
SECOND = "\n// the same kernel, a second candidate\n"


def call(name, **arguments):
    return {"name": name, "arguments": arguments}


def episode_turns(solution):
    """The scripted policy: one list of tool calls per step."""
    broken = solution.replace("__global__", "__global__ not_cxx", 1)
    return [
        [call("write_file", path="a.cu", content=broken)],
        [call("compile", path="a.cu")],
        [call("write_file", path="a.cu", content=solution)],
        [call("compile", path="a.cu")],
        [call("evaluate", path="a.cu")],
        [call("read_file", path="a.cu")],
        [call("shell", command="ls -l; wc -c a.cu")],
        [call("write_file", path="b.cu", content=solution + SECOND)],
        [call("profile", path="a.cu")],
        [call("evaluate", path="b.cu")],
        [call("list_files")],
        [call("finish", path="a.cu", summary="the example solution")],
    ]


def adversarial_turns(kernels):
    turns = []
    for name, source in kernels:
        turns.append([call("write_file", path=name, content=source)])
        turns.append([call("evaluate", path=name)])
    turns.append([call("finish", path=kernels[0][0])])
    return turns


class Episode:
    def __init__(self, url, problem, turns, limits=None):
        self.url, self.problem, self.turns, self.limits = url, problem, turns, limits or {}
        self.steps = []  # (tool, seconds at the client, is_error, content head, seconds the call ran in the service)
        self.error = None
        self.final = None
        self.session_id = None
        self.wall_s = None

    def run(self):
        t0 = time.monotonic()
        body = {"problem": self.problem, "limits": {"steps": max(len(self.turns), 1), **self.limits}}
        status, payload, err = mb.http_call(self.url, "POST", "/v1/sessions", body, timeout=1800)
        if status != 200:
            self.error = f"open: {status} {mb.error_text(status, payload, err)}"
            return
        self.session_id = payload["session_id"]
        path = f"/v1/sessions/{self.session_id}"
        for calls in self.turns:
            s0 = time.monotonic()
            status, payload, err = mb.http_call(self.url, "POST", path + "/step", {"tool_calls": calls}, timeout=1800)
            dt = time.monotonic() - s0
            if status != 200:
                self.error = f"step {calls[0]['name']}: {status} {mb.error_text(status, payload, err)}"
                break
            for c, o in zip(calls, payload["observations"]):
                self.steps.append((c["name"], dt / len(calls), o["is_error"], o["content"][:300], o.get("seconds")))
            if payload.get("done"):
                self.final = payload
                break
        status, payload, err = mb.http_call(self.url, "POST", path + "/close", {}, timeout=600)
        if status != 200 and self.error is None:
            self.error = f"close: {status} {mb.error_text(status, payload, err)}"
        self.wall_s = time.monotonic() - t0


def busy_monitor(svc, stop, samples):
    """(time, queue depth, busy seconds) every 0.2 s."""
    while not stop.is_set():
        m = svc.metrics()
        samples.append((time.monotonic(), mb.metric_total(m, "kagent_queue_depth"),
                        mb.metric_total(m, "kagent_gpu_busy_seconds_total")))
        stop.wait(0.2)


def busy_while_waiting(samples, n_gpus):
    """GPU busy seconds over GPU wall seconds, over the intervals whose start saw evaluations waiting;
    and those intervals' wall seconds."""
    wall = busy = 0.0
    for (t0, depth, b0), (t1, _, b1) in zip(samples, samples[1:]):
        if depth > 0:
            wall += (t1 - t0) * n_gpus
            busy += b1 - b0
    return (busy / wall) if wall > 0 else None, wall / max(n_gpus, 1)


def transcript_records(sessions_dir, session_id):
    """The evaluation events of one episode's transcript: [(workspace path, compact record)]."""
    out = []
    path = os.path.join(sessions_dir, session_id, "transcript.jsonl")
    if not os.path.exists(path):
        return out
    with open(path, encoding="utf-8") as f:
        for line in f:
            e = json.loads(line)
            if e.get("type") == "evaluation":
                out.append((e["score"]["path"], mb.compact(e.get("report") or {})))
    return out


def eval_alone(kagent, files, op, gpu, preset, env, timeout_s=900):
    """`kagent eval FILES --op OP --json` on one GPU: ({file: record}, the process)."""
    cmd = [kagent, "eval", *files, "--op", op, "--json", "--gpu", str(gpu)]
    if preset:
        cmd += ["--preset", preset]
    p = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=timeout_s)
    return mb.match_records(mb.parse_eval_output(p.stdout), files), p


def write(path, text):
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
    return path


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], epilog=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kagent", required=True)
    ap.add_argument("--kernelbench", required=True, help="folder with level1/")
    ap.add_argument("--gpus", default="0")
    ap.add_argument("--episodes", type=int, default=64)
    ap.add_argument("--problems", default=",".join(DEFAULT_PROBLEMS))
    ap.add_argument("--preset", default="default", help="the service's --preset and kagent eval's")
    ap.add_argument("--work", help="folder for the problems root, sessions and logs (default: a temporary one)")
    ap.add_argument("--out", help="write the figures and every episode's steps as JSON")
    a = ap.parse_args(argv)

    problems = [p for p in a.problems.split(",") if p]
    missing = [p for p in problems if not os.path.exists(os.path.join(a.kernelbench, "level1", p + ".py"))
               or not os.path.exists(os.path.join(SOLUTIONS, p + ".cu"))]
    if missing or a.episodes < 1:
        print(f"session_episodes: no problem or no solution for {', '.join(missing) or '-'}, or no episodes",
              file=sys.stderr)
        return 2
    work = a.work or tempfile.mkdtemp(prefix="kagent-episodes-")
    root = os.path.join(work, "root")
    os.makedirs(os.path.join(root, "ops"), exist_ok=True)
    if os.path.islink(os.path.join(root, "level1")):
        os.unlink(os.path.join(root, "level1"))
    os.makedirs(os.path.join(root, "level1"), exist_ok=True)
    for p in problems:  # copies: the service refuses a problem whose path leads outside its root
        shutil.copyfile(os.path.join(a.kernelbench, "level1", p + ".py"), os.path.join(root, "level1", p + ".py"))
    vector_add = os.path.join(root, "ops", "vector_add")
    if not os.path.exists(vector_add):
        shutil.copytree(os.path.join(ROOT, "examples", "vector_add"), vector_add)
    sessions_dir = os.path.join(work, "sessions")
    gpus = [int(g) for g in a.gpus.split(",")]
    env = dict(os.environ)
    svc = mb.Service(a.kagent, root, a.gpus, os.path.join(work, "serve.log"), env, preset=a.preset,
                     extra=["--sessions-dir", sessions_dir, "--max-sessions", str(a.episodes + 8)])
    try:
        url = svc.start()
    except RuntimeError as e:
        print(f"session_episodes: {e}", file=sys.stderr)
        return 3
    solutions = {}
    for p in problems:
        with open(os.path.join(SOLUTIONS, p + ".cu"), encoding="utf-8") as f:
            solutions[p] = f.read()
    episodes = []
    for i in range(a.episodes):
        p = problems[i % len(problems)]
        episodes.append(Episode(url, f"level1/{p}", episode_turns(solutions[p])))
    kernels = []
    for k in ADVERSARIAL:
        with open(os.path.join(ROOT, "tests", "gpu", "kernels", k), encoding="utf-8") as f:
            kernels.append((k, f.read()))
    adversary = Episode(url, "ops/vector_add/op.json", adversarial_turns(kernels), limits={"evaluations": len(kernels)})
    print(f"session_episodes: {a.episodes} episodes over {len(problems)} problems and one adversarial episode "
          f"on GPUs {a.gpus}, preset {a.preset}", flush=True)
    stop, samples = threading.Event(), []
    monitor = threading.Thread(target=busy_monitor, args=(svc, stop, samples), daemon=True)
    monitor.start()
    t0 = time.monotonic()
    threads = [threading.Thread(target=e.run) for e in episodes + [adversary]]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.monotonic() - t0
    stop.set()
    monitor.join()
    after = svc.metrics()
    code = svc.stop()
    print(f"  all episodes ended in {wall:.1f} s; the service exited {code}", flush=True)

    ok = True
    lost = [e for e in episodes + [adversary] if e.error or e.final is None]
    for e in lost:
        print(f"  ! {e.problem} {e.session_id}: {e.error or 'no done step'}")
    ok = ok and not lost
    per_hour = len(episodes) / wall * 3600 if wall > 0 else None

    # Step latencies by tool (the adversarial episode's too).
    by_tool, ran = collections.defaultdict(list), collections.defaultdict(list)
    for e in episodes + [adversary]:
        for tool, dt, _, _, ran_s in e.steps:
            by_tool[tool].append(dt * 1000)
            ran[tool].append((ran_s or 0) * 1000)
    rows, tool_figures = [], {}
    for tool in sorted(by_tool, key=lambda t: (t not in NON_GPU, t)):
        v = by_tool[tool]
        p50, p99 = mb.percentile(v, 50), mb.percentile(v, 99)
        run_p50, run_p99 = mb.percentile(ran[tool], 50), mb.percentile(ran[tool], 99)
        tool_figures[tool] = {"n": len(v), "p50_ms": p50, "p99_ms": p99, "max_ms": max(v), "ran_p50_ms": run_p50,
                              "ran_p99_ms": run_p99}
        goal = ""
        if tool in NON_GPU:
            met = p50 <= GOALS["p50_ms"] and p99 <= GOALS["p99_ms"]
            ok = ok and met
            goal = "met" if met else "MISSED"
        rows.append([tool, len(v), p50, p99, max(v), run_p50, run_p99, goal])
    print()
    print(mb.table(["tool", "steps", "p50 ms", "p99 ms", "max ms", "ran p50", "ran p99", "goal (non-GPU: 50/500 ms)"],
                   rows))
    print("(a step's time at the client; \"ran\": the call's own time in the service)")

    share, waiting_s = busy_while_waiting(samples, len(gpus))
    busy_total = mb.metric_total(after, "kagent_gpu_busy_seconds_total")
    busy_met = share is not None and share >= GOALS["busy_share"]
    ok = ok and busy_met
    print(f"\nGPU busy while evaluations waited: {mb.fmt(share)} over {waiting_s:.1f} s "
          f"(goal >= {GOALS['busy_share']}: {'met' if busy_met else 'MISSED'}); busy {busy_total:.1f} s of "
          f"{wall:.1f} s wall in all")
    print(f"episodes per hour: {mb.fmt(per_hour, 0)} ({len(episodes)} episodes in {wall:.1f} s on {len(gpus)} GPU(s))")

    # Verdicts: every evaluation of the episodes against `kagent eval` of the same source, run alone.
    served = []
    for e in episodes:
        if e.session_id:
            for path, rec in transcript_records(sessions_dir, e.session_id):
                served.append({"problem": e.problem, "solution": path, "name": path, "record": rec})
    alone = {}
    eval_dir = os.path.join(work, "alone")
    os.makedirs(eval_dir, exist_ok=True)
    for p in problems:
        files = [write(os.path.join(eval_dir, f"{p}-a.cu"), solutions[p]),
                 write(os.path.join(eval_dir, f"{p}-b.cu"), solutions[p] + SECOND)]
        recs, proc = eval_alone(a.kagent, files, os.path.join(a.kernelbench, "level1", p + ".py"), gpus[0], a.preset,
                                env)
        for name, f in zip(("a.cu", "b.cu"), files):
            if f in recs:
                alone[(name, f"level1/{p}")] = mb.compact(recs[f])
            else:
                print(f"  ! kagent eval {p} {name}: no record (exit {proc.returncode}): {proc.stderr[-300:]}")
    cmp = mb.compare_verdicts(served, alone)
    verdicts_met = (len(served) > 0 and cmp["compared"] == len(served) and cmp["correct_equal"] == cmp["compared"]
                    and cmp["tiers_equal"] + cmp["tier_diffs_within_noise"] == cmp["compared"])
    ok = ok and verdicts_met
    print(f"\nverdicts: {cmp['compared']} of {len(served)} evaluations compared with kagent eval alone: correct equal "
          f"on {cmp['correct_equal']}, tiers equal on {cmp['tiers_equal']}, {cmp['tier_diffs_within_noise']} tier "
          f"differences within noise ({'met' if verdicts_met else 'MISSED'})")
    for d in cmp["correctness_diffs"][:5]:
        print(f"  ! correctness differs: {d['problem']} {d['name']}: served {d['served']} alone {d['alone']}")
    for d in cmp["tier_diffs"][:8]:
        print(f"  tier {d['served_tier']} served vs {d['alone_tier']} alone on {d['problem']} {d['name']}: speedups "
              f"{mb.fmt(d['served_speedup_vs_eager'])}/{mb.fmt(d['served_speedup_vs_compile'])} vs "
              f"{mb.fmt(d['alone_speedup_vs_eager'])}/{mb.fmt(d['alone_speedup_vs_compile'])}"
              f"{' (within noise)' if d['within_noise'] else ''}")

    # The adversarial kernels: tier -1 in the episode, and as kagent eval says.
    adv_files = [write(os.path.join(eval_dir, "adv-" + name), text) for name, text in kernels]
    adv_alone, _ = eval_alone(a.kagent, adv_files, os.path.join(vector_add, "op.json"), gpus[0], a.preset, env)
    in_episode = dict(transcript_records(sessions_dir, adversary.session_id)) if adversary.session_id else {}
    adv_rows, adv_met = [], True
    for (name, _), f in zip(kernels, adv_files):
        s = in_episode.get(name) or {}
        al = mb.compact(adv_alone.get(f)) or {}
        met = s.get("tier") == -1 and al.get("tier") == -1
        adv_met = adv_met and met
        adv_rows.append([name, s.get("tier"), s.get("failure_stage"), al.get("tier"), al.get("failure_stage"),
                         "rejected" if met else "NOT REJECTED"])
    ok = ok and adv_met
    print()
    print(mb.table(["adversarial kernel", "episode tier", "stage", "eval tier", "stage", ""], adv_rows))
    print(f"\nsession_episodes: {'all goals met' if ok else 'a goal missed or an episode lost'}")

    if a.out:
        with open(a.out, "w", encoding="utf-8") as f:
            json.dump({"episodes": len(episodes), "problems": problems, "gpus": gpus, "preset": a.preset,
                       "wall_s": wall, "episodes_per_hour": per_hour, "tools": tool_figures,
                       "busy_share_while_waiting": share, "waiting_s": waiting_s, "busy_s": busy_total,
                       "verdicts": cmp, "adversarial": adv_rows, "lost": [e.error for e in lost],
                       "steps": [{"problem": e.problem, "session": e.session_id, "steps": e.steps,
                                  "wall_s": e.wall_s} for e in episodes + [adversary]]}, f, indent=1)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
