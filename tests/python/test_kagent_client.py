"""kagent_client (python/kagent_client): the code block a completion's candidate is taken from, the
RL reward by its name, round-robin and failover over several endpoints, the verl compute_score and
the OpenRLHF /get_reward proxy against stand-in services, and the client against a real
`kagent serve` without a GPU ($KAGENT_BIN; skipped when not set)."""
import json
import math
import os
import re
import subprocess
import tempfile
import threading
import time
import unittest
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import kagent_client
from kagent_client import Client, RequestRefused, Unavailable, compute_score, last_code_block, reward_of
from kagent_client.reward_proxy import make_server
from serve_process import ServeProcess


def record(tier, speedup=None, compile_speedup=None):
    return {"candidate": "c", "tier": tier, "speedup_vs_eager": speedup, "speedup_vs_compile": compile_speedup,
            "compile": {"ok": tier != -1}}


class StandIn:
    """A stand-in for kagent serve on 127.0.0.1: answers POST /v1/evaluate with `answer(body)` ->
    (status, json, headers), counting calls and keeping the bodies and Authorization headers."""

    def __init__(self, answer):
        self.calls, self.bodies, self.auth = 0, [], []
        outer = self

        class H(BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                outer.calls += 1
                outer.bodies.append(body)
                outer.auth.append(self.headers.get("Authorization"))
                status, obj, headers = answer(body)
                data = json.dumps(obj).encode()
                self.send_response(status)
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *a):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), H)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


def by_source(body):
    """tier from "tier N" in the source; "speedup X" too; "bad" -> 400 naming a field; "fits" -> 422."""
    src = body["source"]
    if "bad" in src:
        return 400, {"error": {"status": 400, "field": "measure.min_samples", "message": "expected an integer"}}, None
    if "fits" in src:
        return 422, {"error": {"status": 422, "message": "launch[0]: unknown kernel"}}, None
    m = re.search(r"tier (-?\d)", src)
    s = re.search(r"speedup ([0-9.]+)", src)
    sp = float(s.group(1)) if s else None
    return 200, record(int(m.group(1)) if m else 1, sp, sp and sp / 2), None


def dead_url():
    s = ThreadingHTTPServer(("127.0.0.1", 0), BaseHTTPRequestHandler)
    url = f"http://127.0.0.1:{s.server_address[1]}"
    s.server_close()  # nothing listens there now
    return url


class CodeBlocks(unittest.TestCase):
    def test_last_fenced_block(self):
        text = "think\n```cuda\n__global__ void a() {}\n```\nbetter:\n```python\nclass ModelNew:\n    pass\n```\nend"
        self.assertEqual(last_code_block(text), ("python", "class ModelNew:\n    pass\n"))
        self.assertEqual(last_code_block("```\nx\n```"), ("", "x\n"))
        self.assertIsNone(last_code_block("no code here"))
        self.assertIsNone(last_code_block("```cuda\nunterminated"))
        self.assertIsNone(last_code_block(None))

    def test_kind(self):
        self.assertEqual(kagent_client.kind_of("python", "x"), "modelnew")
        self.assertEqual(kagent_client.kind_of("cuda", "class ModelNew"), "plan")
        self.assertEqual(kagent_client.kind_of("", "import torch\nclass ModelNew(nn.Module):\n"), "modelnew")
        self.assertEqual(kagent_client.kind_of("", "__global__ void k() {}"), "plan")


class ImportGraph(unittest.TestCase):
    def test_no_module_of_the_package_imports_one_that_imports_it_back(self):
        """The package's own imports (from .x import ..., at any depth in a module) form no cycle."""
        import ast

        pkg = os.path.dirname(kagent_client.__file__)
        edges = {}
        for f in os.listdir(pkg):
            if not f.endswith(".py") or f == "__init__.py":
                continue
            mod = f[:-3]
            tree = ast.parse(open(os.path.join(pkg, f), encoding="utf-8").read())
            edges[mod] = {n.module.split(".")[0] for n in ast.walk(tree)
                          if isinstance(n, ast.ImportFrom) and n.level == 1 and n.module}

        def reaches(start, goal, seen):
            for nxt in edges.get(start, ()):
                if nxt == goal or (nxt not in seen and reaches(nxt, goal, seen | {nxt})):
                    return True
            return False

        cycles = sorted(m for m in edges if reaches(m, m, {m}))
        self.assertEqual(cycles, [], f"modules on an import cycle: {cycles}")


class Rewards(unittest.TestCase):
    def test_by_name(self):
        self.assertEqual(reward_of(record(3, 2.0, 1.1)), 3.0)
        self.assertEqual(reward_of(record(-1)), -1.0)
        self.assertAlmostEqual(reward_of(record(2, 2.0, 0.5), "log_speedup"), math.log(2.0))
        self.assertAlmostEqual(reward_of(record(2, 2.0, 0.5), "log_speedup_compile"), math.log(0.5))
        self.assertEqual(reward_of(record(-1), "log_speedup"), -1.0)
        self.assertEqual(reward_of(record(-1), "log_speedup", incorrect_reward=-5), -5.0)
        self.assertEqual(reward_of(record(1, None), "log_speedup"), 0.0)  # correct, not timed
        with self.assertRaises(ValueError):
            reward_of(record(1), "speed")


class Endpoints(unittest.TestCase):
    def setUp(self):
        self.a, self.b = StandIn(by_source), StandIn(by_source)

    def tearDown(self):
        self.a.close()
        self.b.close()

    def test_round_robin(self):
        c = Client([self.a.url, self.b.url], token="tok")
        for _ in range(6):
            self.assertEqual(c.evaluate("tier 2", "level1/19")["tier"], 2)
        self.assertEqual((self.a.calls, self.b.calls), (3, 3))
        self.assertEqual(self.a.bodies[0], {"source": "tier 2", "kind": "plan", "problem": "level1/19"})
        self.assertEqual(set(self.a.auth), {"Bearer tok"})

    def test_failover_to_a_live_endpoint(self):
        busy = StandIn(lambda body: (503, {"error": {"status": 503, "message": "no GPU"}}, None))
        try:
            c = Client(f"{dead_url()},{busy.url},{self.a.url}", rounds=1)
            for _ in range(3):
                self.assertEqual(c.evaluate("tier 3", "level1/19", tolerance=0.01)["tier"], 3)
            self.assertEqual(self.a.calls, 3)
            self.assertEqual(self.a.bodies[0]["tolerance"], 0.01)
        finally:
            busy.close()

    def test_every_endpoint_unavailable(self):
        full = StandIn(lambda body: (429, {"error": {"status": 429, "message": "the queue is full"}},
                                     {"Retry-After": "1"}))
        try:
            c = Client([full.url, dead_url()], rounds=2, max_wait_s=0.05)
            with self.assertRaises(Unavailable) as e:
                c.evaluate("tier 1", "level1/19")
            self.assertEqual(full.calls, 2)  # once per round
            self.assertIn(e.exception.status, (0, 429))
        finally:
            full.close()

    def test_a_bad_request_is_not_retried(self):
        c = Client([self.a.url, self.b.url])
        with self.assertRaises(RequestRefused) as e:
            c.evaluate("bad", "level1/19")
        self.assertEqual(e.exception.status, 400)
        self.assertEqual(e.exception.field, "measure.min_samples")
        self.assertEqual(self.a.calls + self.b.calls, 1)

    def test_batch(self):
        batch = StandIn(lambda body: (200, {"results": [record(2) for _ in body["requests"]]}, None))
        try:
            c = Client(batch.url)
            out = c.evaluate_batch([{"source": "x", "problem": "level1/19"},
                                    {"source": "class ModelNew:\n", "problem": "level1/19", "precision": "bf16"}])
            self.assertEqual(len(out), 2)
            sent = batch.bodies[0]["requests"]
            self.assertEqual(sent[1], {"source": "class ModelNew:\n", "kind": "modelnew", "problem": "level1/19",
                                       "precision": "bf16"})
        finally:
            batch.close()

    def test_compute_score(self):
        completion = "Here it is:\n```cuda\n// tier 3 speedup 2.0\n```\n"
        self.assertEqual(compute_score("kernelbench", completion, "level1/19", None, endpoints=self.a.url), 3.0)
        self.assertAlmostEqual(
            compute_score("kernelbench", completion, {"problem": "level1/19", "precision": "fp16"},
                          {"kagent": {"endpoints": [self.a.url], "reward": "log_speedup"}}), math.log(2.0))
        self.assertEqual(self.a.bodies[-1]["precision"], "fp16")
        # RL rewards are measured under the training preset unless the caller names another.
        self.assertEqual(self.a.bodies[-1]["measure"], {"preset": "training"})
        compute_score("kb", completion, {"problem": "level1/19", "measure": {"preset": "default", "min_samples": 9}},
                      None, endpoints=self.a.url, preset="training")
        self.assertEqual(self.a.bodies[-1]["measure"], {"preset": "default", "min_samples": 9})
        compute_score("kb", completion, "level1/19", {"kagent": {"preset": "default"}}, endpoints=self.a.url)
        self.assertEqual(self.a.bodies[-1]["measure"], {"preset": "default"})
        calls = self.a.calls
        self.assertEqual(compute_score("kb", "no code", "level1/19", None, endpoints=self.a.url), -1.0)
        self.assertEqual(self.a.calls, calls)  # nothing to evaluate, nothing sent
        self.assertEqual(compute_score("kb", "```cuda\nfits\n```", "level1/19", None, endpoints=self.a.url,
                                       reward="log_speedup", incorrect_reward=-2), -2.0)
        with self.assertRaises(RequestRefused):
            compute_score("kb", "```cuda\nbad\n```", "level1/19", None, endpoints=self.a.url)
        with self.assertRaises(Unavailable):
            compute_score("kb", "```cuda\ntier 1\n```", "level1/19", None,
                          client=Client(dead_url(), rounds=1))
        old = os.environ.get("KAGENT_REWARD")
        os.environ["KAGENT_REWARD"] = "log_speedup"
        try:
            self.assertAlmostEqual(compute_score("kb", "```\n// tier 2 speedup 4\n```", '{"problem": "level1/19"}',
                                                 None, endpoints=self.a.url), math.log(4.0))
        finally:
            if old is None:
                del os.environ["KAGENT_REWARD"]
            else:
                os.environ["KAGENT_REWARD"] = old

    def test_get_reward_proxy(self):
        server = make_server("127.0.0.1", 0, Client([self.a.url, self.b.url]), reward="tier")
        threading.Thread(target=server.serve_forever, daemon=True).start()
        try:
            url = f"http://127.0.0.1:{server.server_address[1]}/get_reward"
            prompts = ["Write ReLU.", "Write Softmax.", "Write GELU."]
            query = [prompts[0] + "```cuda\n// tier 3\n```", prompts[1] + "```cuda\n// tier 2\n```",
                     prompts[2] + "I cannot."]
            body = json.dumps({"query": query, "prompts": prompts, "labels": ["level1/19", "level1/23", "level1/26"]})
            req = urllib.request.Request(url, data=body.encode(), headers={"Content-Type": "application/json"})
            with urllib.request.urlopen(req, timeout=30) as r:
                self.assertEqual(json.loads(r.read())["rewards"], [3.0, 2.0, -1.0])
            self.assertEqual(self.a.calls + self.b.calls, 2)
            self.assertEqual(sorted(b["problem"] for b in self.a.bodies + self.b.bodies), ["level1/19", "level1/23"])
            bad = urllib.request.Request(url, data=b'{"query": ["x"]}', headers={"Content-Type": "application/json"})
            with self.assertRaises(urllib.error.HTTPError) as e:
                urllib.request.urlopen(bad, timeout=30)
            self.assertEqual(e.exception.code, 400)
            self.assertIn("labels", e.exception.read().decode())
        finally:
            server.shutdown()
            server.server_close()


@unittest.skipUnless(os.environ.get("KAGENT_BIN"), "KAGENT_BIN (the built kagent) not set")
class AgainstKagentServe(unittest.TestCase):
    """The real service with its GPUs hidden (CUDA_VISIBLE_DEVICES=): 503 naming why, 4xx naming the field."""

    def test_no_gpu(self):
        with tempfile.TemporaryDirectory() as tmp:
            os.makedirs(os.path.join(tmp, "root", "level1"))
            with open(os.path.join(tmp, "root", "level1", "19_ReLU.py"), "w") as f:
                f.write("# problem\n")
            serve = ServeProcess(self, tmp)
            try:
                c = Client(serve.url, rounds=1)
                health = c.health()[c.endpoints[0]]
                self.assertEqual(health["status"], "unavailable")
                with self.assertRaises(Unavailable) as e:
                    c.evaluate("__global__ void k() {}", "level1/19")
                self.assertEqual(e.exception.status, 503)
                self.assertIn("no GPU", e.exception.message)
                with self.assertRaises(RequestRefused) as e:
                    c.evaluate("x", "../../etc/passwd")
                self.assertEqual((e.exception.status, e.exception.field), (400, "problem"))
                with self.assertRaises(RequestRefused) as e:
                    c.evaluate("x", "level1/19", trials="3")
                self.assertEqual(e.exception.field, "trials")
                with self.assertRaises(Unavailable):
                    compute_score("kb", "```cuda\n__global__ void k() {}\n```", "level1/19", None, client=c)
            finally:
                serve.stop()


class Packaging(unittest.TestCase):
    def test_verl_loads_the_reward_file_by_path(self):
        import importlib.util
        path = os.path.join(os.path.dirname(kagent_client.__file__), "verl.py")
        spec = importlib.util.spec_from_file_location("custom_module", path)  # as verl does
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        self.assertIs(module.compute_score, compute_score)

    def test_pyproject(self):
        try:
            import tomllib
        except ImportError:
            self.skipTest("tomllib needs Python 3.11")
        root = os.path.join(os.path.dirname(kagent_client.__file__), "..")
        with open(os.path.join(root, "pyproject.toml"), "rb") as f:
            meta = tomllib.load(f)
        self.assertEqual(meta["project"]["name"], "kagent-client")
        self.assertEqual(meta["project"]["dependencies"], [])
        self.assertEqual(meta["tool"]["setuptools"]["packages"], ["kagent_client"])


if __name__ == "__main__":
    unittest.main()
