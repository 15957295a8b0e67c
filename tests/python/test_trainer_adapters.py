"""The trainer adapters of kagent_client against the frameworks' real classes and a real `kagent serve`
without a GPU ($KAGENT_BIN; skipped when not set): the scripted policy of examples/optimize_demo
drives an episode to its finish through

  - SkyRL: skyrl-gym 0.4.0's registry and BaseTextEnv (kagent_client.skyrl_env);
  - OpenRLHF: 0.11.2's MultiTurnAgentExecutor (openrlhf/utils/agent.py from its wheel; its logger and
    aiohttp stood in for, as OpenRLHF's own tests do), loaded by path as --train.agent_func_path
    loads kagent_client/openrlhf_agent.py;
  - verl: 0.9.1's ToolAgentLoop, AgentLoopBase, Hermes tool parser and tool schemas
    (kagent_client.verl_agent_loop), with stand-ins for what needs a cluster: ray, hydra, torch (when
    not installed), the tokenizer's token builder and the model server, which plays the recorded turns.

tools/install-deps.sh --test installs the pinned packages into build/python-deps; a test whose
framework is missing skips, saying which."""
import asyncio
import contextlib
import importlib
import importlib.util
import json
import logging
import os
import shutil
import sys
import tempfile
import types
import unittest
from types import SimpleNamespace
from unittest import mock

from kagent_client import Client
from kagent_client import verl_config
from kagent_client.text_episode import chatml, messages_with_tools, problem_of
from serve_process import ServeProcess

SOURCE = os.path.join(os.path.dirname(__file__), "..", "..")
PROBLEM = "demo/op.json"


def scripted_texts():
    """The demo's recorded assistant turns as a model writes them: words, then <tool_call> blocks."""
    with open(os.path.join(SOURCE, "examples", "optimize_demo", "session.jsonl")) as f:
        turns = [json.loads(line) for line in f if line.strip()]
    return [t["content"] + "".join("\n<tool_call>" + json.dumps({"name": c["name"], "arguments": c["arguments"]}) +
                                   "</tool_call>" for c in t["tool_calls"]) for t in turns], turns


def available(module):
    try:
        importlib.import_module(module)
        return True
    except ImportError:
        return False


def on_path(relative):
    """The first folder on sys.path holding `relative` (install-deps.sh puts the pinned frameworks in
    build/python-deps, which the test's PYTHONPATH names), or None."""
    for folder in sys.path:
        if folder and os.path.exists(os.path.join(folder, relative)):
            return folder
    return None


class WithService(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp()
        shutil.copytree(os.path.join(SOURCE, "examples", "optimize_demo"), os.path.join(self.tmp, "root", "demo"))
        self.serve = ServeProcess(self, self.tmp, ["--sessions-dir", os.path.join(self.tmp, "sessions")])
        self.texts, self.turns = scripted_texts()

    def tearDown(self):
        self.serve.stop()
        shutil.rmtree(self.tmp, ignore_errors=True)

    def session_folders(self):
        root = os.path.join(self.tmp, "sessions")
        return [os.path.join(root, d) for d in os.listdir(root)] if os.path.isdir(root) else []

    def assert_closed_after_finish(self):
        """One session, finished by the model, closed: its workspace gone, its summary kept."""
        folders = self.session_folders()
        self.assertEqual(len(folders), 1, folders)
        self.assertFalse(os.path.exists(os.path.join(folders[0], "workspace")))
        with open(os.path.join(folders[0], "summary.json")) as f:
            summary = json.load(f)
        self.assertEqual(summary["done_reason"], "finish")
        self.assertEqual(summary["steps"], len(self.turns))
        return summary


class SharedPieces(unittest.TestCase):
    def test_problem_of_reads_each_frameworks_row(self):
        self.assertEqual(problem_of({"problem": "level1/19"}), "level1/19")
        self.assertEqual(problem_of({"extra_info": {"problem": "level1/2"}}), "level1/2")
        self.assertEqual(problem_of({"reward_spec": {"ground_truth": "level1/3"}}), "level1/3")
        self.assertEqual(problem_of({"reward_model": {"ground_truth": "level1/4"}}), "level1/4")
        self.assertEqual(problem_of({"label": "level1/5"}), "level1/5")
        with self.assertRaisesRegex(ValueError, "extra_info.problem"):
            problem_of({"prompt": "x"})

    def test_tools_go_into_the_system_message_and_chatml_wraps_tool_results(self):
        tools = [{"type": "function", "function": {"name": "compile", "description": "d", "parameters": {}}}]
        m = messages_with_tools([{"role": "system", "content": "S"}, {"role": "user", "content": "U"}], tools)
        self.assertTrue(m[0]["content"].startswith("S\n\n# Tools"))
        self.assertIn('<tools>\n{"type": "function", "function": {"name": "compile"', m[0]["content"])
        text = chatml([{"role": "tool", "content": "a"}, {"role": "tool", "content": "b"}])
        self.assertEqual(text, "<|im_start|>user\n<tool_response>\na\n</tool_response>\n<tool_response>\nb\n"
                               "</tool_response><|im_end|>\n<|im_start|>assistant\n")


@unittest.skipUnless(os.environ.get("KAGENT_BIN"), "KAGENT_BIN (the built kagent) not set")
@unittest.skipUnless(available("skyrl_gym"), "skyrl-gym 0.4.0 is not installed (tools/install-deps.sh --test)")
class SkyRLTextEnv(WithService):
    def test_an_episode_through_skyrl_gyms_registry(self):
        import skyrl_gym
        from skyrl_gym.envs.base_text_env import BaseTextEnv

        from kagent_client import skyrl_env

        skyrl_env.register("kagent-test")
        env = skyrl_gym.make("kagent-test", env_config={"endpoints": self.serve.url, "limits": {"steps": 40}},
                             extras={"extra_info": {"problem": PROBLEM}})
        self.assertIsInstance(env, BaseTextEnv)
        prompt, metadata = env.init([{"role": "user", "content": "the dataset's prompt, replaced"}])
        self.assertEqual([m["role"] for m in prompt], ["system", "user"])
        self.assertIn("<tools>", prompt[0]["content"])
        self.assertIn("softmax_rows_demo", prompt[1]["content"])
        self.assertEqual(env.max_turns, 40)
        for n, text in enumerate(self.texts):
            out = env.step(text)
            self.assertEqual(set(out), {"observations", "reward", "done", "metadata", "postprocessed_action"})
            self.assertEqual(out["postprocessed_action"], text)
            if n + 1 < len(self.texts):
                self.assertFalse(out["done"])
                self.assertEqual(out["reward"], 0.0)
                self.assertEqual([m["role"] for m in out["observations"]], ["tool"] * len(self.turns[n]["tool_calls"]))
            else:
                self.assertTrue(out["done"])
                self.assertEqual(out["metadata"]["done_reason"], "finish")
                self.assertIn("reward_note", out["metadata"])  # no GPU measured it: reward 0.0, said why
        self.assertEqual(env.get_metrics()["finished"], 1.0)
        env.close()
        env.close()
        self.assertEqual(env.summary["state"], "closed")
        self.assert_closed_after_finish()


def load_openrlhf_agent():
    """OpenRLHF 0.11.2's openrlhf/utils/agent.py as openrlhf.utils.agent (its package needs CUDA builds)."""
    folder = on_path(os.path.join("openrlhf-0.11.2", "agent.py"))
    if folder is None:
        return None
    path = os.path.join(folder, "openrlhf-0.11.2", "agent.py")
    stubs = {"openrlhf": types.ModuleType("openrlhf"), "openrlhf.utils": types.ModuleType("openrlhf.utils"),
             "openrlhf.utils.logging_utils": SimpleNamespace(init_logger=logging.getLogger),
             "aiohttp": types.ModuleType("aiohttp")}
    with mock.patch.dict(sys.modules, stubs):
        spec = importlib.util.spec_from_file_location("openrlhf.utils.agent", path)
        agent = importlib.util.module_from_spec(spec)
        sys.modules["openrlhf.utils.agent"] = agent
        spec.loader.exec_module(agent)
    return agent


def torch_or_stand_in():
    """torch, or what the adapters and executors use of it: tensor(x).item()."""
    if available("torch"):
        return {}
    import numpy
    return {"torch": SimpleNamespace(tensor=lambda x, **kw: numpy.asarray(x))}


class CharTokenizer:
    """A tokenizer of one token per character (as OpenRLHF's own tests use)."""

    def __call__(self, text, **kwargs):
        import numpy
        return {"input_ids": numpy.asarray([[ord(c) for c in text]])}

    def decode(self, ids, **kwargs):
        return "".join(chr(i) for i in ids)


@unittest.skipUnless(os.environ.get("KAGENT_BIN"), "KAGENT_BIN (the built kagent) not set")
@unittest.skipUnless(available("numpy"), "numpy is not installed (tools/install-deps.sh --test)")
class OpenRLHFAgent(WithService):
    def test_an_episode_through_the_multi_turn_executor(self):
        agent = load_openrlhf_agent()
        if agent is None:
            self.skipTest("OpenRLHF 0.11.2's agent module is not in build/python-deps (tools/install-deps.sh --test)")
        path = os.path.join(SOURCE, "python", "kagent_client", "openrlhf_agent.py")
        env = {"KAGENT_ENDPOINTS": self.serve.url, "KAGENT_SESSION": json.dumps({"limits": {"steps": 40}})}
        with mock.patch.dict(sys.modules, {"openrlhf.utils.agent": agent, **torch_or_stand_in()}), \
                mock.patch.dict(os.environ, env):
            # As OpenRLHF's vllm_engine._load_agent_executor loads --train.agent_func_path.
            spec = importlib.util.spec_from_file_location("agent_module", path)
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
            self.assertTrue(issubclass(module.AgentExecutor, agent.AgentExecutorBase))
            module.KagentAgentInstance.client = None
            texts = list(self.texts)

            class Engine:
                async def generate(self, token_ids, params, **kwargs):
                    text = texts.pop(0)
                    return SimpleNamespace(outputs=[SimpleNamespace(token_ids=[ord(c) for c in text], text=text,
                                                                    finish_reason="stop", logprobs=None)])

            response = asyncio.run(module.AgentExecutor().execute(
                "the dataset's prompt", PROBLEM, SimpleNamespace(max_tokens=None, logprobs=None), 1 << 24,
                CharTokenizer(), Engine()))
        self.assertEqual(texts, [])
        self.assertEqual(len(response["action_ranges"]), len(self.turns))
        self.assertEqual(response["reward"], 0.0)  # no GPU measured the final candidate
        conversation = "".join(chr(i) for i in response["observation_tokens"])
        self.assertTrue(conversation.startswith("<|im_start|>system\n"))
        self.assertIn("<tools>", conversation)
        self.assertIn("softmax_rows_demo", conversation)
        self.assertIn("<|im_start|>user\n<tool_response>\n", conversation)
        for start, end in response["action_ranges"]:
            self.assertIn("<tool_call>", conversation[start:end])
        self.assert_closed_after_finish()


def load_verl():
    """verl 0.9.1's agent loop, tool loop, tool parser and tool schemas (real files), its heavy imports
    stood in for: returns the sys.modules entries to patch in, or None without verl."""
    folder = on_path(os.path.join("verl", "experimental", "agent_loop", "tool_agent_loop.py"))
    if folder is None:
        return None
    root = os.path.join(folder, "verl")
    if not available("pydantic") or not available("regex"):
        return None
    import pydantic
    if not pydantic.VERSION.startswith("2."):
        return None

    def package(name, path=None):
        m = types.ModuleType(name)
        m.__path__ = [path] if path else []
        return m

    def stub(name, **attrs):
        m = mock.MagicMock(name=name)
        for k, v in attrs.items():
            setattr(m, k, v)
        return m

    @contextlib.contextmanager
    def simple_timer(name, metrics):
        yield

    torch = sys.modules.get("torch")
    if torch is None and not available("torch"):
        torch = types.ModuleType("torch")
        torch.Tensor = type("Tensor", (), {})
    mods = {
        "verl": package("verl", root),
        "verl.experimental": package("verl.experimental", os.path.join(root, "experimental")),
        "verl.experimental.agent_loop": package("verl.experimental.agent_loop",
                                                os.path.join(root, "experimental", "agent_loop")),
        "verl.tools": package("verl.tools", os.path.join(root, "tools")),
        "verl.utils": package("verl.utils", os.path.join(root, "utils")),
        "verl.utils.rollout_trace": stub("rollout_trace", rollout_trace_op=lambda f: f,
                                         rollout_trace_attr=lambda **kw: contextlib.nullcontext()),
        "verl.utils.profiler": stub("profiler", simple_timer=simple_timer),
        "verl.utils.ray_utils": stub("ray_utils", get_event_loop=asyncio.get_running_loop),
        "verl.utils.tokenizer.continuous_token_wiring": stub(
            "continuous_token_wiring", create_continuous_token_builder=lambda tokenizer, **kw: TokenBuilder(tokenizer)),
    }
    for name in ("hydra", "ray", "omegaconf", "PIL", "tensordict", "transformers", "transformers.utils",
                 "verl.protocol", "verl.tools.tool_registry", "verl.trainer", "verl.trainer.distillation",
                 "verl.utils.config", "verl.utils.dataset", "verl.utils.dataset.rl_dataset", "verl.utils.import_utils",
                 "verl.utils.model", "verl.utils.skip", "verl.utils.tokenizer", "verl.workers", "verl.workers.config",
                 "verl.workers.rollout", "verl.workers.rollout.llm_server", "verl.workers.rollout.replica"):
        mods[name] = stub(name)
    if torch is not None:
        mods["torch"] = torch
    return mods


class TokenBuilder:
    """verl's continuous token builder, one token per character of the ChatML rendering: the prompt,
    the model's tokens appended as sampled (mask 1), the messages a turn adds rendered (mask 0)."""

    def __init__(self, tokenizer):
        self.tokenizer = tokenizer

    def build_initial_tokens(self, messages, tools=None, **kwargs):
        return [ord(c) for c in chatml(messages_with_tools(messages, tools or []))]

    def merge_assistant_tokens(self, runtime_ids, assistant_ids):
        return SimpleNamespace(token_ids=list(runtime_ids) + list(assistant_ids), added=len(assistant_ids), mask=1)

    def merge_context_tokens(self, previous, updated, runtime_ids, tools=None):
        added = [ord(c) for c in "\n" + chatml(updated[len(previous):])]
        return SimpleNamespace(token_ids=list(runtime_ids) + added, added=len(added), mask=0)

    def align_response_metadata(self, merge, response_mask, response_logprobs, assistant_logprobs=None):
        return list(response_mask) + [merge.mask] * merge.added, None


@unittest.skipUnless(os.environ.get("KAGENT_BIN"), "KAGENT_BIN (the built kagent) not set")
class VerlAgentLoop(WithService):
    def test_an_episode_through_verls_tool_agent_loop(self):
        mods = load_verl()
        if mods is None:
            self.skipTest("verl 0.9.1 with pydantic and regex is not in build/python-deps (tools/install-deps.sh --test)")
        texts = list(self.texts)
        tokenizer = CharTokenizer()

        class Server:
            async def generate(self, request_id, prompt_ids, sampling_params, **kwargs):
                return SimpleNamespace(token_ids=[ord(c) for c in texts.pop(0)], log_probs=None, num_preempted=None,
                                       extra_fields={}, routed_experts=None)

        multi_turn = SimpleNamespace(max_user_turns=None, max_assistant_turns=None, max_parallel_calls=32,
                                     max_tool_response_length=24576, tool_response_truncate_side="middle",
                                     format="hermes")
        rollout = SimpleNamespace(multi_turn=multi_turn, prompt_length=1 << 22, response_length=1 << 22,
                                  full_determinism=False)
        config = SimpleNamespace(actor_rollout_ref=SimpleNamespace(rollout=rollout))
        with mock.patch.dict(sys.modules, mods):
            for name in [n for n in sys.modules if n.startswith("kagent_client.verl_agent_loop")]:
                del sys.modules[name]
            from kagent_client import verl_agent_loop
            agent_loop = sys.modules["verl.experimental.agent_loop.agent_loop"]
            self.assertEqual(agent_loop._agent_loop_registry["kagent"]["_target_"],
                             "kagent_client.verl_agent_loop.KagentAgentLoop")

            async def trajectory():
                # As AgentLoopWorker._run_agent_loop instantiates a registered loop (hydra passes the
                # agent loop config's keys, its name among them).
                loop = verl_agent_loop.KagentAgentLoop(
                    trainer_config=agent_loop.DictConfigWrap(config), server_manager=Server(), tokenizer=tokenizer,
                    processor=None, dataset_cls=object, data_config=agent_loop.DictConfigWrap({}), hf_model_type=None,
                    tools=agent_loop.ToolListWrap([]), name="kagent", endpoints=self.serve.url,
                    session={"limits": {"steps": 40}})
                return await loop.run({"temperature": 1.0}, raw_prompt=[{"role": "user", "content": "replaced"}],
                                      extra_info={"problem": PROBLEM})

            output = asyncio.run(trajectory())
            self.assertIsInstance(output, agent_loop.AgentLoopOutput)
        self.assertEqual(texts, [])
        self.assertEqual(len(output.response_ids), len(output.response_mask))
        response = "".join(chr(i) for i in output.response_ids)
        prompt = "".join(chr(i) for i in output.prompt_ids)
        self.assertIn("softmax_rows_demo", prompt)
        self.assertIn("<tools>", prompt)
        # Every call's result, finish's too (verl adds the last turn's tool messages before it stops).
        self.assertEqual(response.count("<tool_response>"), sum(len(t["tool_calls"]) for t in self.turns))
        model_part = "".join(c for c, m in zip(response, output.response_mask) if m)
        self.assertEqual(model_part, "".join(self.texts))
        self.assertIsNone(output.reward_score)  # no GPU measured the final candidate
        self.assertEqual(output.extra_fields["kagent_done_reason"], "finish")
        self.assertEqual(output.num_turns, 2 * len(self.turns) + 1)  # verl counts the prompt too
        self.assert_closed_after_finish()

    def test_the_config_writer_names_the_loop_the_tools_and_the_limits(self):
        out = os.path.join(self.tmp, "conf")
        with open(os.path.join(self.tmp, "stdout"), "w") as f, contextlib.redirect_stdout(f):
            rc = verl_config.main(["--endpoints", self.serve.url, "--problem", PROBLEM, "--out", out, "--session",
                                   '{"limits": {"observation_bytes": 20000}}'])
        self.assertEqual(rc, 0)
        with open(os.path.join(self.tmp, "stdout")) as f:
            lines = f.read().split()
        self.assertIn("actor_rollout_ref.rollout.multi_turn.max_tool_response_length=20000", lines)
        self.assertIn("actor_rollout_ref.rollout.agent.default_agent_loop=kagent", lines)
        with open(os.path.join(out, "kagent_tools.yaml")) as f:
            tools = json.load(f)["tools"]
        with Client(self.serve.url).open_session(PROBLEM) as s:
            opening = s.opening
        self.assertEqual([t["tool_schema"] for t in tools], opening["tools"])
        self.assertTrue(all(t["class_name"] == "kagent_client.verl_agent_loop.KagentTool" for t in tools))
        with open(os.path.join(out, "kagent_agent_loop.yaml")) as f:
            loop = json.load(f)
        self.assertEqual(loop[0]["name"], "kagent")
        self.assertEqual(loop[0]["session"], {"limits": {"observation_bytes": 20000}})


if __name__ == "__main__":
    unittest.main()
