"""kagent_client.KernelEnv (python/kagent_client/env.py) against a real `kagent serve` without a GPU
($KAGENT_BIN; skipped when not set): the scripted policy of examples/optimize_demo drives an episode
through every tool to its finish, through KernelEnv and through the gymnasium.Env adapter (skipped,
saying so, when gymnasium is not installed)."""
import json
import os
import shutil
import tempfile
import unittest

from kagent_client import Client, KernelEnv, gymnasium_env
from serve_process import ServeProcess

SOURCE = os.path.join(os.path.dirname(__file__), "..", "..")


def scripted_turns():
    """The recorded assistant turns of the demo (as the `script` provider plays them)."""
    with open(os.path.join(SOURCE, "examples", "optimize_demo", "session.jsonl")) as f:
        return [json.loads(line) for line in f if line.strip()]


@unittest.skipUnless(os.environ.get("KAGENT_BIN"), "KAGENT_BIN (the built kagent) not set")
class KernelEnvAgainstKagentServe(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp()
        shutil.copytree(os.path.join(SOURCE, "examples", "optimize_demo"), os.path.join(self.tmp, "root", "demo"))
        self.serve = ServeProcess(self, self.tmp, ["--sessions-dir", os.path.join(self.tmp, "sessions")])

    def tearDown(self):
        self.serve.stop()
        shutil.rmtree(self.tmp, ignore_errors=True)

    def run_episode(self, env):
        obs, info = env.reset(seed=0)
        self.assertEqual([m["role"] for m in obs["messages"]], ["system", "user"])
        self.assertIn("softmax_rows_demo", obs["messages"][1]["content"])
        names = {t["function"]["name"] for t in obs["tools"]}
        self.assertTrue({"write_file", "compile", "evaluate", "profile", "finish"} <= names, names)
        turns = scripted_turns()
        for n, turn in enumerate(turns):
            # Every other turn as the model's text, as a trainer that decodes the tokens sends it.
            if n % 2:
                text = turn["content"] + "".join(
                    "\n<tool_call>" + json.dumps({"name": c["name"], "arguments": c["arguments"]}) + "</tool_call>"
                    for c in turn["tool_calls"])
                action = {"text": text}
            else:
                action = {"tool_calls": turn["tool_calls"]}
            obs, reward, terminated, truncated, info = env.step(action)
            self.assertEqual(len(obs), len(turn["tool_calls"]))
            self.assertTrue(all(m["role"] == "tool" for m in obs))
            if turn["tool_calls"][0]["name"] == "evaluate":
                self.assertIn("no GPU", obs[0]["content"])
            if n + 1 < len(turns):
                self.assertFalse(terminated or truncated)
        self.assertTrue(terminated)
        self.assertFalse(truncated)
        self.assertEqual(info["done_reason"], "finish")
        self.assertTrue(info["reward_missing"])  # no GPU measured it
        self.assertEqual(reward, 0.0)
        sid = info_id = env.session.id
        env.close()
        self.assertEqual(env.summary["session_id"], info_id)
        self.assertEqual(env.summary["final_path"], "softmax.cu")
        self.assertTrue(os.path.exists(os.path.join(self.tmp, "sessions", sid, "transcript.jsonl")))
        self.assertFalse(os.path.exists(os.path.join(self.tmp, "sessions", sid, "workspace")))

    def test_scripted_episode(self):
        self.run_episode(KernelEnv("demo/op.json", client=Client(self.serve.url, rounds=1)))

    def test_gymnasium_adapter(self):
        try:
            import gymnasium
        except ImportError:
            self.skipTest("gymnasium is not installed (tools/install-deps.sh --test installs gymnasium==1.0.0)")
        env = gymnasium_env("demo/op.json", client=Client(self.serve.url, rounds=1))
        self.assertIsInstance(env, gymnasium.Env)
        self.run_episode(env.inner)
        env.close()

    def test_limits_and_refusals(self):
        env = KernelEnv("demo/op.json", client=Client(self.serve.url, rounds=1), limits={"steps": 1},
                        reward="best_tier")
        obs, info = env.reset()
        self.assertEqual(info["limits"]["steps"], 1)
        obs, reward, terminated, truncated, info = env.step("no tool call here")
        self.assertEqual(obs[0]["role"], "user")  # kagent's words for a reply that did no work
        self.assertTrue(truncated)
        self.assertEqual(info["done_reason"], "step limit")
        env.close()
        with self.assertRaises(Exception) as e:
            KernelEnv("demo/op.json", client=Client(self.serve.url, rounds=1), reward="speed").reset()
        self.assertEqual(getattr(e.exception, "field", None), "reward")


if __name__ == "__main__":
    unittest.main()
