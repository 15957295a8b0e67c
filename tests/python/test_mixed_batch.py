"""benchmarks/mixed_batch.py without a GPU: its pure parts (problems, requests, orders, budgets,
metrics, verdict comparison, tables), then each part end to end against a stand-in `kagent` (a
Python script written here: `serve` answers /health, /metrics, /v1/evaluate and
/v1/evaluate_batch with made-up records, `eval` prints them)."""
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import textwrap
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(ROOT, "benchmarks", "mixed_batch.py")

_spec = importlib.util.spec_from_file_location("mixed_batch", SCRIPT)
mb = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(mb)

# The stand-in: a service with LRU warm problems per "GPU" (ballast problems also bounded by their
# size in GiB, so that they evict one another) and `kagent eval` records whose tiers differ from the
# served ones for two problems: 21_* within noise of the eager line, 23_* far from it.
FAKE_KAGENT = r'''#!/usr/bin/env python3
import http.server, json, os, re, signal, sys, threading, time

argv = sys.argv[1:]
if os.environ.get("FAKE_KAGENT_LOG"):
    with open(os.environ["FAKE_KAGENT_LOG"], "a") as f:
        f.write(json.dumps(argv) + "\n")


def opt(name, default=None):
    return argv[argv.index(name) + 1] if name in argv else default


def record(problem, name, alone=False):
    stem = problem.rsplit("/", 1)[-1]
    tier, se, sc = 1, 0.99, 0.98
    if alone and stem.startswith("21_"):
        tier, se, sc = 2, 1.03, 1.0
    if alone and stem.startswith("23_"):
        tier, se, sc = 3, 1.5, 1.3
    return {"candidate": name, "op": problem, "compile": {"ok": True}, "tier": tier, "reason": "made up",
            "speedup_vs_eager": se, "speedup_vs_compile": sc, "baselines": {"eager_ms": 1.0, "compile_ms": 0.99},
            "outcome": {"correct": True, "failure_stage": "none", "message": "",
                        "candidate_time": {"median_ms": 1.0 / se}}}


if argv[0] == "eval":
    cands = argv[1:argv.index("--op")]
    op = opt("--op")
    problem = os.path.basename(os.path.dirname(op)) + "/" + os.path.basename(op)[:-3]
    for c in cands:
        print(json.dumps(record(problem, c, alone=True)))
    sys.exit(0)

assert argv[0] == "serve", argv
gpus = opt("--gpus", "0").split(",")
limit = int(opt("--warm-problems", "16"))
lock = threading.Lock()
gpu_locks = {g: threading.Lock() for g in gpus}
warm = {g: [] for g in gpus}
busy = {g: 0.0 for g in gpus}
starts = {}
evictions = {g: 0 for g in gpus}
state = {"depth": 0, "next": 0}


def size(p):
    m = re.search(r"ballast_(\d+)g", p)
    return int(m.group(1)) if m else 0


def evaluate(req):
    problem = req["problem"]
    with lock:
        state["depth"] += 1
        have = [g for g in gpus if problem in warm[g]]
        g = have[0] if have else gpus[state["next"] % len(gpus)]
        state["next"] += 1
    with gpu_locks[g]:
        t = time.monotonic()
        with lock:
            state["depth"] -= 1
            cold = problem not in warm[g]
            if cold:
                starts[(g, "in_turn")] = starts.get((g, "in_turn"), 0) + 1
                warm[g].append(problem)
            else:
                warm[g].remove(problem)
                warm[g].append(problem)
            while len(warm[g]) > limit or sum(size(p) for p in warm[g]) > 70:
                warm[g].pop(0)
                evictions[g] += 1
        time.sleep(0.02 if cold else 0.005)
        dt = time.monotonic() - t
        with lock:
            busy[g] += dt
    rec = record(problem, req.get("name", "candidate.cu"))
    rec["serve"] = {"gpu": int(g), "queued_s": 0.0, "evaluated_s": dt, "problem": "cold" if cold else "warm"}
    rec["problem_state"] = "started" if cold else "current"
    rec["problem_wait_s"] = 0.0
    return rec


class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def answer(self, code, body, ctype="application/json"):
        data = body.encode() if isinstance(body, str) else json.dumps(body).encode()
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(data)))
        self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(data)
        self.close_connection = True

    def do_GET(self):
        if self.path == "/health":
            return self.answer(200, {"status": "ok", "gpus": [int(g) for g in gpus]})
        if self.path == "/metrics":
            with lock:
                lines = [f"kagent_queue_depth {state['depth']}"]
                lines += [f'kagent_gpu_busy_seconds_total{{gpu="{g}"}} {busy[g]}' for g in gpus]
                lines += [f'kagent_warm_problems{{gpu="{g}"}} {len(warm[g])}' for g in gpus]
                lines += [f'kagent_problem_starts_total{{gpu="{g}",how="{h}"}} {n}' for (g, h), n in starts.items()]
                lines += [f'kagent_problem_evictions_total{{gpu="{g}"}} {evictions[g]}' for g in gpus]
            return self.answer(200, "# HELP x\n" + "\n".join(lines) + "\n", "text/plain")
        self.answer(404, {"error": {"status": 404, "message": "no such endpoint"}})

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        if self.path == "/v1/evaluate":
            if body["problem"].endswith("_Refused"):
                return self.answer(422, {"error": {"status": 422, "field": "problem", "message": "does not load"}})
            return self.answer(200, evaluate(body))
        if self.path == "/v1/evaluate_batch":
            return self.answer(200, {"results": [evaluate(r) for r in body["requests"]]})
        self.answer(404, {"error": {"status": 404, "message": "no such endpoint"}})


server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
server.daemon_threads = True
signal.signal(signal.SIGTERM, lambda *a: threading.Thread(target=server.shutdown).start())
print(f"kagent serve: listening on http://127.0.0.1:{server.server_address[1]} (GPUs {','.join(gpus)})", flush=True)
server.serve_forever(poll_interval=0.05)
print("kagent serve: stopped", file=sys.stderr)
'''

PLAN = "/*kagent\n{\"launch\": []}\n*/\n// stand-in\n"


def make_tree(d, problems, solutions_extra=()):
    """A KernelBench-like folder and a solutions folder under d."""
    kb, sols = os.path.join(d, "kb"), os.path.join(d, "sols")
    for p in problems:
        level, name = p.split("/")
        for base, ext, text in ((kb, ".py", "# problem\n"), (sols, ".cu", PLAN + f"// {p}\n")):
            os.makedirs(os.path.join(base, level), exist_ok=True)
            with open(os.path.join(base, level, name + ext), "w") as f:
                f.write(text)
    for p in solutions_extra:
        level, name = p.split("/")
        os.makedirs(os.path.join(sols, level), exist_ok=True)
        with open(os.path.join(sols, level, name + ".cu"), "w") as f:
            f.write(PLAN)
    return kb, sols


class PureParts(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.d = self.tmp.name

    def tearDown(self):
        self.tmp.cleanup()

    def test_finds_solved_problems_in_natural_order(self):
        kb, sols = make_tree(self.d, ["level1/100_Big", "level1/19_ReLU", "level2/3_X", "level1/2_Y"],
                             solutions_extra=["level1/7_NoProblem"])
        found, missing = mb.find_problems([sols], kb)
        self.assertEqual([p["problem"] for p in found],
                         ["level1/2_Y", "level1/19_ReLU", "level1/100_Big", "level2/3_X"])
        self.assertTrue(all(os.path.isabs(p["solution"]) and os.path.isfile(p["file"]) for p in found))
        self.assertEqual(len(missing), 1)
        self.assertIn("7_NoProblem", missing[0])

    def test_examples_have_at_least_24_problems_with_their_kernelbench_files(self):
        kb = os.environ.get("KAGENT_KERNELBENCH_DIR", os.path.join(os.path.dirname(ROOT), "shared", "kernelbench"))
        if not os.path.isdir(kb):
            self.skipTest(f"no KernelBench problems at {kb}")
        found, _ = mb.find_problems([mb.DEFAULT_SOLUTIONS], kb)
        self.assertGreaterEqual(len(found), 24, [p["problem"] for p in found])
        for want in mb.SWITCH_DEFAULTS:
            self.assertIn(want, [p["problem"] for p in found])

    def test_requests_names_distinct_and_orders(self):
        kb, sols = make_tree(self.d, ["level1/19_ReLU", "level1/21_Sigmoid", "level2/76_G"])
        found, _ = mb.find_problems([sols], kb)
        reqs = mb.build_requests(found, 4, "training")
        self.assertEqual(len(reqs), 12)
        self.assertEqual(len({r["name"] for r in reqs}), 12)
        body = json.loads(reqs[0]["data"])
        self.assertEqual(set(body), {"source", "kind", "problem", "name", "measure"})
        self.assertEqual(body["kind"], "plan")
        self.assertEqual(body["measure"], {"preset": "training"})
        self.assertEqual(body["problem"], "level1/19_ReLU")
        self.assertTrue(body["source"].startswith("/*kagent"))
        srt = mb.arrange(reqs, "sorted", 1)
        self.assertEqual([r["problem"] for r in srt], ["level1/19_ReLU"] * 4 + ["level1/21_Sigmoid"] * 4 +
                         ["level2/76_G"] * 4)
        a, b, c = mb.arrange(reqs, "shuffled", 1), mb.arrange(reqs, "shuffled", 1), mb.arrange(reqs, "shuffled", 2)
        self.assertEqual([r["name"] for r in a], [r["name"] for r in b])
        self.assertNotEqual([r["name"] for r in a], [r["name"] for r in c])
        self.assertEqual(sorted(r["name"] for r in a), sorted(r["name"] for r in reqs))
        self.assertNotEqual([r["problem"] for r in a], [r["problem"] for r in srt])
        self.assertEqual(mb.order_plan(2), [("shuffled", 1), ("sorted", 1), ("shuffled", 2), ("sorted", 2)])
        with self.assertRaises(ValueError):
            mb.arrange(reqs, "reversed", 1)

    def test_fit_budget_cuts_rounds_then_requests(self):
        evals = [0.5] * 26
        self.assertEqual(mb.fit_budget(16, 1, evals, 2, 3.0, 10000)[:2], (16, 1))
        r, rounds, est = mb.fit_budget(16, 3, evals, 2, 3.0, 300)
        self.assertEqual(rounds, 1)
        self.assertLessEqual(2 * est, 300)
        self.assertLess(r, 16)
        self.assertEqual(mb.fit_budget(16, 2, evals, 2, 3.0, 1)[:2], (1, 1))

    def test_switch_plan(self):
        plan = mb.switch_plan("AABBAC")
        self.assertEqual([w for _, w in plan], ["first", "repeat", "first", "repeat", "back", "first"])
        with self.assertRaises(ValueError):
            mb.switch_plan("AA-B")
        got = mb.pick_switch_problems(["p1", "p2", "p3"], ["p3", "nope"], ["A", "B", "C"])
        self.assertEqual(got, {"A": "p3", "B": "p1", "C": "p2"})
        with self.assertRaises(ValueError):
            mb.pick_switch_problems(["p1"], [], ["A", "B"])

    def test_metrics(self):
        text = textwrap.dedent('''\
            # HELP kagent_up 1 when
            # TYPE kagent_up gauge
            kagent_up 1
            kagent_queue_depth 7
            kagent_gpu_busy_seconds_total{gpu="0"} 12.5
            kagent_gpu_busy_seconds_total{gpu="1"} 10
            kagent_problem_starts_total{gpu="0",how="ahead"} 3
            kagent_problem_starts_total{gpu="1",how="ahead"} 1
            kagent_problem_starts_total{gpu="1",how="in_turn"} 2
            kagent_problem_evictions_total{gpu="0"} 4
            kagent_evaluation_latency_seconds_bucket{le="+Inf"} 9
            not a metric line
            ''')
        m = mb.parse_metrics(text)
        self.assertEqual(mb.metric_total(m, "kagent_problem_evictions_total"), 4)
        self.assertEqual(mb.metric_total(m, "kagent_problem_starts_total", gpu=1), 3)
        self.assertEqual(mb.metric_by(m, "kagent_problem_starts_total", "how"), {"ahead": 4, "in_turn": 2})
        self.assertEqual(mb.metric_by(m, "kagent_gpu_busy_seconds_total", "gpu"), {"0": 12.5, "1": 10})
        self.assertEqual(mb.metric_max(m, "kagent_queue_depth"), 7)
        self.assertEqual(mb.metric_by(m, "kagent_evaluation_latency_seconds_bucket", "le"), {"+Inf": 9})
        before = mb.parse_metrics('kagent_problem_starts_total{gpu="0",how="ahead"} 1\n')
        self.assertEqual(mb.diff_by(m, before, "kagent_problem_starts_total", "how"), {"ahead": 3, "in_turn": 2})
        self.assertEqual(mb.parse_metrics(""), [])

    def test_percentile(self):
        self.assertIsNone(mb.percentile([], 50))
        self.assertEqual(mb.percentile([3, 1, 2], 50), 2)
        self.assertEqual(mb.percentile(list(range(1, 101)), 99), 99)
        self.assertEqual(mb.percentile([5], 99), 5)

    def test_compact_and_memory_failures(self):
        rec = {"candidate": "c.cu", "tier": -1, "compile": {"ok": True},
               "outcome": {"correct": False, "failure_stage": "launch", "message": "CUDA_ERROR_OUT_OF_MEMORY: x"},
               "serve": {"gpu": 0, "queued_s": 1, "evaluated_s": 2, "problem": "cold", "extra": 1},
               "problem_state": "started", "problem_wait_s": 0.5}
        c = mb.compact(rec)
        self.assertEqual(c["serve"], {"gpu": 0, "queued_s": 1, "evaluated_s": 2, "problem": "cold"})
        self.assertTrue(mb.memory_failure(c))
        self.assertTrue(mb.memory_failure(mb.compact({"outcome": {"correct": False, "out_of_memory": True}})))
        self.assertFalse(mb.memory_failure(mb.compact({"outcome": {"correct": False, "message": "mismatch at 3"}})))
        self.assertFalse(mb.memory_failure(mb.compact({"outcome": {"correct": True}})))
        self.assertIsNone(mb.compact("nope"))

    def test_noise_and_verdicts(self):
        def r(tier, se, sc, correct=True):
            return {"tier": tier, "correct": correct, "speedup_vs_eager": se, "speedup_vs_compile": sc}

        self.assertTrue(mb.within_noise(r(1, 0.99, 0.98), r(2, 1.03, 1.0)))
        self.assertFalse(mb.within_noise(r(1, 0.99, 0.98), r(2, 1.2, 1.0)))
        self.assertTrue(mb.within_noise(r(2, 1.3, 1.04), r(3, 1.3, 1.07)))  # the compile line, 1/0.95
        self.assertFalse(mb.within_noise(r(2, 1.3, 0.9), r(3, 1.3, 1.2)))
        self.assertFalse(mb.within_noise(r(1, None, None), r(2, 1.01, 1.0)))
        self.assertFalse(mb.within_noise(r(1, 0.99, 0.98), r(1, 0.98, 0.99)))  # no line between them
        served = [{"problem": "p", "solution": "s", "name": "n1", "record": r(1, 0.99, 0.98)},
                  {"problem": "p", "solution": "s", "name": "n2", "record": r(2, 1.02, 1.0)},
                  {"problem": "q", "solution": "t", "name": "n3", "record": r(-1, None, None, correct=False)},
                  {"problem": "z", "solution": "u", "name": "n4", "record": r(1, 0.9, 0.9)}]
        alone = {("s", "p"): r(2, 1.03, 1.0), ("t", "q"): r(1, 0.9, 0.9)}
        c = mb.compare_verdicts(served, alone)
        self.assertEqual(c["compared"], 3)
        self.assertEqual(c["correct_equal"], 2)
        self.assertEqual(c["tiers_equal"], 1)
        self.assertEqual(len(c["tier_diffs"]), 1)
        self.assertTrue(c["tier_diffs"][0]["within_noise"])
        self.assertEqual(len(c["correctness_diffs"]), 1)
        self.assertEqual(c["not_compared"], {"z": 1})

    def test_eval_output(self):
        one = json.dumps({"candidate": "/x/a.cu", "tier": 1}, indent=2)
        self.assertEqual(mb.parse_eval_output(one), [{"candidate": "/x/a.cu", "tier": 1}])
        many = "\n".join(json.dumps({"candidate": c, "tier": t}) for c, t in (("/x/b.cu", 2), ("/x/a.cu", 1)))
        recs = mb.parse_eval_output("warning: x\n" + many)
        self.assertEqual(len(recs), 2)
        got = mb.match_records(recs, ["/y/a.cu", "/y/b.cu"])
        self.assertEqual(got["/y/a.cu"]["tier"], 1)
        self.assertEqual(got["/y/b.cu"]["tier"], 2)
        self.assertEqual(mb.parse_eval_output(""), [])

    def test_table_and_ratio(self):
        t = mb.table(["a", "bb"], [["x", 1.2345], ["yyy", None]])
        self.assertEqual(t.splitlines(), ["a      bb", "x    1.23", "yyy     -"])

        def o(order, tp, cut=False):
            return {"order": order, "cut": cut, "summary": {"throughput_per_s": tp}}

        self.assertAlmostEqual(mb.ratio_of([o("shuffled", 9), o("sorted", 10)]), 0.9)
        self.assertAlmostEqual(mb.ratio_of([o("shuffled", 9), o("sorted", 10), o("shuffled", 11), o("sorted", 10)]),
                               1.0)
        self.assertIsNone(mb.ratio_of([o("shuffled", 9), o("sorted", 10, cut=True)]))


class AgainstAStandIn(unittest.TestCase):
    """Each part end to end against the stand-in kagent."""

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        d = cls.tmp.name
        cls.kagent = os.path.join(d, "kagent")
        with open(cls.kagent, "w") as f:
            f.write(FAKE_KAGENT.replace("#!/usr/bin/env python3", "#!" + sys.executable, 1))
        os.chmod(cls.kagent, 0o755)
        cls.problems = ["level1/19_ReLU", "level1/21_Sigmoid", "level1/23_Softmax", "level2/76_Gemm_Add_ReLU",
                        "level2/12_Gemm_Multiply_LeakyReLU", "level2/29_Matmul_Mish_Mish"]
        cls.kb, cls.sols = make_tree(d, cls.problems)

    def setUp(self):
        name = self.id().rsplit(".", 1)[-1]
        self.log = os.path.join(self.tmp.name, name + ".argv.jsonl")  # this test's calls
        self.cache = os.path.join(self.tmp.name, name + ".cache")  # and its cache (the warm-up's marker)

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def run_part(self, *args, timeout=120):
        env = dict(os.environ, FAKE_KAGENT_LOG=self.log, PYTHONDONTWRITEBYTECODE="1")
        env.pop("KAGENT_CACHE_DIR", None)
        p = subprocess.run([sys.executable, SCRIPT, *args, "--kagent", self.kagent, "--cache-dir", self.cache,
                            "--work", os.path.join(self.tmp.name, "work")],
                           capture_output=True, text=True, env=env, timeout=timeout)
        return p

    def argv_log(self):
        with open(self.log) as f:
            return [json.loads(l) for l in f]

    def test_orders_then_verdicts(self):
        out = os.path.join(self.tmp.name, "orders.json")
        p = self.run_part("orders", "--kernelbench", self.kb, "--solutions", self.sols, "--min-problems", "6",
                          "--requests", "5", "--rounds", "2", "--budget-s", "100", "--out", out)
        self.assertIn(p.returncode, (0, 1), p.stdout + p.stderr)
        with open(out) as f:
            data = json.load(f)
        self.assertEqual([(o["order"], o["round"]) for o in data["orders"]],
                         [("shuffled", 1), ("sorted", 1), ("shuffled", 2), ("sorted", 2)])
        for o in data["orders"]:
            s = o["summary"]
            self.assertEqual((s["requests"], s["answered"], s["lost"]), (30, 30, 0), s)
            self.assertEqual(sum(s["serve_problem"].values()), 30)
            self.assertEqual(set(s["gpu_busy_share"]), {"0", "1"})
            self.assertGreater(s["throughput_per_s"], 0)
            self.assertEqual(len({r["name"] for r in o["records"]}), 30)
        srt = [r["problem"] for r in data["orders"][1]["records"]]
        self.assertEqual(srt, sorted(srt, key=mb.natural_key))
        self.assertIsNotNone(data["ratio_shuffled_sorted"])
        self.assertEqual(data["warmup"]["sent_problems"], 6)
        self.assertIn("shuffled/sorted throughput:", p.stdout)
        self.assertIn("serve.problem", p.stdout)
        serves = [a for a in self.argv_log() if a[0] == "serve"]
        self.assertEqual(len(serves), 5)  # the warm-up and four orders, each a fresh service
        for a in serves:
            for flag, value in (("--gpus", "0,1"), ("--preset", "training"), ("--queue", "4096"), ("--port", "0"),
                                ("--problems-root", self.kb), ("--max-batch", "1024")):
                self.assertEqual(a[a.index(flag) + 1], value, a)

        # A second run finds the warm-up's marker in the cache: no warm-up service.
        out2 = os.path.join(self.tmp.name, "orders2.json")
        p = self.run_part("orders", "--kernelbench", self.kb, "--solutions", self.sols, "--min-problems", "6",
                          "--requests", "2", "--budget-s", "60", "--out", out2)
        with open(out2) as f:
            self.assertEqual(json.load(f)["warmup"]["sent_problems"], 0)

        vout = os.path.join(self.tmp.name, "verdicts.json")
        p = self.run_part("verdicts", "--from", out, "--gpus", "0,1", "--budget-s", "60", "--out", vout)
        self.assertEqual(p.returncode, 1, p.stdout + p.stderr)  # 23_Softmax differs by more than noise
        with open(vout) as f:
            v = json.load(f)
        cmp = v["comparison"]
        self.assertEqual(cmp["compared"], 120)
        self.assertEqual(cmp["correct_equal"], 120)
        self.assertEqual(cmp["tiers_equal"], 80)
        self.assertEqual(len(cmp["tier_diffs"]), 40)
        self.assertEqual(cmp["tier_diffs_within_noise"], 20)
        self.assertEqual(len(v["runs"]), 6)
        evals = [a for a in self.argv_log() if a[0] == "eval"]
        self.assertEqual(len(evals), 6)
        for a in evals:
            self.assertEqual(a[a.index("--preset") + 1], "training")
            self.assertIn("--json", a)
            self.assertIn(a[a.index("--gpu") + 1], ("0", "1"))
        self.assertIn("within noise", p.stdout)

    def test_too_few_problems(self):
        p = self.run_part("orders", "--kernelbench", self.kb, "--solutions", self.sols, "--budget-s", "30")
        self.assertEqual(p.returncode, 2)
        self.assertIn("at least 24 needed", p.stderr)

    def test_switch(self):
        out = os.path.join(self.tmp.name, "switch.json")
        p = self.run_part("switch", "--kernelbench", self.kb, "--solutions", self.sols, "--budget-s", "60",
                          "--out", out)
        self.assertIn(p.returncode, (0, 1), p.stdout + p.stderr)
        with open(out) as f:
            s = json.load(f)
        self.assertEqual(s["problems"]["A"], "level2/76_Gemm_Add_ReLU")
        # The defaults' fourth and fifth are missing here: the first others take their places.
        self.assertEqual((s["problems"]["D"], s["problems"]["E"]), ("level1/19_ReLU", "level1/21_Sigmoid"))
        self.assertEqual(len(s["sequence"]), len(mb.switch_plan(mb.parser().parse_args(["switch"]).pattern)))
        self.assertEqual(len(s["switch_backs"]), 4)
        self.assertIsNotNone(s["announced_figures"])
        self.assertIsNotNone(s["unannounced_figures"])
        self.assertEqual(s["errors"], [])
        self.assertIn("switch back: median extra", p.stdout)

    def test_eviction(self):
        out = os.path.join(self.tmp.name, "eviction.json")
        p = self.run_part("eviction", "--kernelbench", self.kb, "--budget-s", "60", "--requests-each", "3",
                          "--out", out)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        with open(out) as f:
            e = json.load(f)
        names = ["ballast/" + os.path.basename(f)[:-3]
                 for f in sorted(os.listdir(mb.BALLAST_DIR)) if f.endswith(".py")]
        self.assertGreaterEqual(len(names), 3)
        self.assertEqual(e["problems"], names + ["level1/19_ReLU"])
        self.assertEqual(e["summary"]["answered"], 3 * len(e["problems"]))
        self.assertGreater(e["summary"]["evictions"], 0)
        self.assertEqual(e["memory_failures"], [])
        serve = [a for a in self.argv_log() if a[0] == "serve"][-1]
        self.assertEqual(serve[serve.index("--warm-problems") + 1], "16")
        self.assertEqual(serve[serve.index("--gpus") + 1], "0")
        self.assertIn("goal (evictions > 0, no out-of-memory verdict, nothing lost): met", p.stdout)


class BallastProblems(unittest.TestCase):
    def test_each_holds_a_distinct_size_as_a_plain_attribute(self):
        files = sorted(f for f in os.listdir(mb.BALLAST_DIR) if f.endswith(".py"))
        sizes = []
        for f in files:
            with open(os.path.join(mb.BALLAST_DIR, f)) as fh:
                text = fh.read()
            m = [l for l in text.splitlines() if l.startswith("BALLAST_GIB = ")]
            self.assertEqual(len(m), 1, f)
            sizes.append(int(m[0].split("=")[1].split("#")[0]))
            self.assertIn("def __deepcopy__", text)
            self.assertNotIn("register_buffer", text)
            self.assertNotIn("nn.Parameter", text)
            for name in ("class Model", "def get_inputs", "def get_init_inputs"):
                self.assertIn(name, text)
        self.assertEqual(len(set(sizes)), len(sizes))
        # With 19_ReLU evaluated beside them (6.4 GB in and out, in the server and in the runner: 24 GiB),
        # more than an H200 holds; any three more than half of it.
        self.assertGreater(sum(sizes) + 24, 141)
        self.assertGreater(sum(sorted(sizes)[:3]), 141 / 2)


if __name__ == "__main__":
    unittest.main()
