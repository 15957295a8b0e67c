#!/usr/bin/env python3
"""One baselines file, every GPU and front end scoring alike (docs/references.md, "Baselines shared
across nodes").

1. `kagent ref PROBLEM --export-baselines FILE` on the first GPU, for each problem;
2. each candidate by `kagent eval --baselines FILE --json` on every GPU given, and by a `kagent
   serve --baselines FILE` on every GPU given (one service per GPU, /v1/evaluate);
3. a copy of FILE with another GPU model, and one with another torch version: `kagent eval` must
   refuse both (exit 2, the field named) and the service must answer 422;
4. a problem FILE has no entry for: refused by both.

A table: per candidate and front end and GPU, the tier, the baselines' eager and torch.compile
medians and where they came from (`torch.source`). The baselines must be the file's, to the digit,
everywhere; the tiers are compared (a candidate whose speed sits at a tier's line may still differ
between two GPUs: its own time is measured, the line is not). Exit 1 when a baseline is not the
file's, a refusal is missing or a tier differs between eval and serve on one GPU.

    python3 benchmarks/shared_baselines.py --kagent build/kagent --kernelbench KernelBench --gpus 0,1
"""

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "python"))
from kagent_client import Client, KagentError  # noqa: E402

# (candidate under the project, its kind, problem under KernelBench)
CASES = [
    ("examples/kernelbench/level1/19_ReLU.cu", "plan", "level1/19_ReLU.py"),
    ("examples/kernelbench/level1/23_Softmax.cu", "plan", "level1/23_Softmax.py"),
    ("examples/kernelbench/level1/1_Square_matrix_multiplication_.cu", "plan",
     "level1/1_Square_matrix_multiplication_.py"),
    ("tests/gpu/modelnew/relu_triton.py", "modelnew", "level1/19_ReLU.py"),
]
NOT_EXPORTED = "level1/20_LeakyReLU.py"


def last_json(text):
    """The last JSON object of `kagent eval --json`'s stdout: one candidate's report is one indented
    object, several candidates' one object per line."""
    decoder, rec, i = json.JSONDecoder(), {}, 0
    while True:
        i = text.find("{", i)
        if i < 0:
            return rec
        try:
            obj, end = decoder.raw_decode(text, i)
        except ValueError:
            i += 1
            continue
        if isinstance(obj, dict):
            rec = obj
        i = end


def row_of(rec):
    t = rec.get("torch") or {}
    return {"tier": rec.get("tier"), "eager": (t.get("eager") or {}).get("median_ms"),
            "compile": (t.get("compile") or {}).get("median_ms"), "source": t.get("source", "")}


def kagent_eval(kagent, cand, problem, gpu, baselines, env):
    p = subprocess.run([kagent, "eval", cand, "--op", problem, "--gpu", str(gpu), "--json", "--baselines", baselines,
                        "--torch-ops", "fail"], cwd=ROOT, capture_output=True, text=True, env=env, timeout=600)
    return p.returncode, last_json(p.stdout), p.stderr


def start_service(kagent, kb, gpu, baselines, env, log_path):
    log = open(log_path, "w")
    p = subprocess.Popen([kagent, "serve", "--problems-root", kb, "--port", "0", "--gpus", str(gpu),
                          "--baselines", baselines], stdout=log, stderr=subprocess.STDOUT, env=env)
    for _ in range(600):
        with open(log_path) as f:
            m = re.search(r"listening on http://[^:]+:(\d+)", f.read())
        if m:
            return p, int(m.group(1))
        if p.poll() is not None:
            sys.exit(f"kagent serve ended (exit {p.returncode}); see {log_path}")
        time.sleep(0.1)
    sys.exit(f"kagent serve did not start; see {log_path}")


def serve_eval(client, cand, kind, problem):
    try:
        return 200, client.evaluate(open(os.path.join(ROOT, cand)).read(), problem, kind,
                                    measure={"torch_ops": "fail"}), ""
    except KagentError as e:
        return getattr(e, "status", -1), {}, str(e)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--kagent", required=True)
    ap.add_argument("--kernelbench", required=True)
    ap.add_argument("--gpus", default="0")
    ap.add_argument("--out", default=None, help="the rows as JSON")
    a = ap.parse_args()
    kagent = os.path.abspath(a.kagent)
    kb = os.path.abspath(a.kernelbench)
    gpus = [int(g) for g in a.gpus.split(",")]
    work = tempfile.mkdtemp(prefix="kagent-shared-baselines-")
    env = dict(os.environ)
    env.setdefault("KAGENT_CACHE_DIR", os.path.join(work, "cache"))  # nothing measured earlier stands in
    baselines = os.path.join(work, "baselines.json")
    bad = []

    problems = sorted({c[2] for c in CASES})
    for prob in problems:
        t0 = time.time()
        p = subprocess.run([kagent, "ref", os.path.join(kb, prob), "--gpu", str(gpus[0]), "--export-baselines",
                            baselines], capture_output=True, text=True, env=env, timeout=900)
        print(f"export {prob} on GPU {gpus[0]}: exit {p.returncode} ({time.time() - t0:.1f} s) "
              f"{p.stderr.strip().splitlines()[-1] if p.stderr.strip() else ''}", flush=True)
        if p.returncode != 0:
            bad.append(f"export {prob}: exit {p.returncode}")
    with open(baselines) as f:
        entries = json.load(f)["entries"]
    by_problem = {e["problem"]: e for e in entries}
    print(f"{baselines}: {len(entries)} entries, measured on {entries[0]['gpu_name']} with torch {entries[0]['torch']}")

    rows = []
    for gpu in gpus:
        for cand, kind, prob in CASES:
            rc, rec, err = kagent_eval(kagent, cand, os.path.join(kb, prob), gpu, baselines, env)
            rows.append({"front": "eval", "gpu": gpu, "cand": cand, "problem": prob, "rc": rc, **row_of(rec),
                         "err": err.strip()[-300:] if not rec else ""})
        proc, port = start_service(kagent, kb, gpu, baselines, env, os.path.join(work, f"serve-{gpu}.log"))
        try:
            client = Client(f"http://127.0.0.1:{port}", rounds=1, timeout_s=900)
            for cand, kind, prob in CASES:
                status, rec, err = serve_eval(client, cand, kind, prob)
                rows.append({"front": "serve", "gpu": gpu, "cand": cand, "problem": prob, "rc": status, **row_of(rec),
                             "err": err[-300:]})
        finally:
            proc.terminate()
            proc.wait(timeout=60)

    print(f"\n{'candidate':<58} {'front':<5} {'gpu':>3} {'tier':>4} {'eager ms':>10} {'compile ms':>10}  source")
    for r in rows:
        e = by_problem[os.path.basename(r["problem"])]
        want_eager = e["eager"]["median_ms"]
        want_compile = (e.get("compile") or {}).get("median_ms")
        same = r["eager"] == want_eager and r["compile"] == want_compile and r["source"] == f"file:{baselines}"
        if not same:
            bad.append(f"{r['front']} GPU {r['gpu']} {r['cand']}: baselines {r['eager']}/{r['compile']} from "
                       f"'{r['source']}', the file's {want_eager}/{want_compile} {r['err']}")
        print(f"{r['cand'][-58:]:<58} {r['front']:<5} {r['gpu']:>3} {str(r['tier']):>4} {r['eager'] or 0:>10.4f} "
              f"{r['compile'] or 0:>10.4f}  {r['source'][:5]}{'' if same else '  NOT THE FILE S'}")
    for gpu in gpus:
        for cand, _, _ in CASES:
            tiers = {r["front"]: r["tier"] for r in rows if r["gpu"] == gpu and r["cand"] == cand}
            if tiers.get("eval") != tiers.get("serve"):
                bad.append(f"GPU {gpu} {cand}: eval tier {tiers.get('eval')}, serve tier {tiers.get('serve')}")
    tiers_by_cand = {}
    for r in rows:
        tiers_by_cand.setdefault(r["cand"], set()).add(r["tier"])
    differ = {c: t for c, t in tiers_by_cand.items() if len(t) > 1}
    print(f"tiers equal on every GPU and front end: {len(tiers_by_cand) - len(differ)} of {len(tiers_by_cand)} "
          f"candidates" + "".join(f"; {c}: {sorted(map(str, t))}" for c, t in differ.items()))

    # Refusals: another GPU model, another torch version, a problem without an entry.
    def tampered(field, value):
        path = os.path.join(work, f"baselines-{field}.json")
        with open(path, "w") as f:
            json.dump({"format": "kagent-baselines-1", "entries": [{**e, field: value} for e in entries]}, f)
        return path

    cand, kind, prob = CASES[0]
    checks = [("gpu_name", "gpu_name: the file's", tampered("gpu_name", "NVIDIA H100 80GB HBM3"), prob),
              ("torch", "torch: the file's", tampered("torch", "2.10.0+cu128"), prob),
              ("no entry", "no entry for", baselines, NOT_EXPORTED)]
    print()
    for what, marker, path, problem in checks:
        rc, rec, err = kagent_eval(kagent, os.path.join(ROOT, cand), os.path.join(kb, problem), gpus[-1], path, env)
        named = marker in err
        print(f"refusal, {what:<8}: kagent eval exit {rc} ({'named' if named else 'NOT NAMED'}): "
              f"{err.strip().splitlines()[-1][:220] if err.strip() else ''}")
        if rc != 2 or not named:
            bad.append(f"eval with {what}: exit {rc}")
        proc, port = start_service(kagent, kb, gpus[-1], path, env, os.path.join(work, f"serve-{what}.log"))
        try:
            status, rec, err = serve_eval(Client(f"http://127.0.0.1:{port}", rounds=1, timeout_s=900), cand, kind,
                                          problem)
        finally:
            proc.terminate()
            proc.wait(timeout=60)
        named = marker in err
        print(f"refusal, {what:<8}: serve status {status} ({'named' if named else 'NOT NAMED'}): {err[:220]}")
        if status != 422 or not named:
            bad.append(f"serve with {what}: status {status}")

    if a.out:
        with open(a.out, "w") as f:
            json.dump({"entries": entries, "rows": rows, "bad": bad}, f, indent=1)
    print(f"\n{len(bad)} problem(s)" + "".join(f"\n  {b}" for b in bad))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
