"""kagent's agent episode as OpenRLHF's multi-turn agent (openrlhf.utils.agent: an AgentInstanceBase
with reset and step, run by MultiTurnAgentExecutor; docs/environment.md). OpenRLHF loads this file by
path, so it imports the installed kagent_client absolutely:

    --train.agent_func_path python/kagent_client/openrlhf_agent.py    # after `pip install ./python`

with KAGENT_ENDPOINTS naming the services and KAGENT_SESSION (JSON) the session's fields, for example
'{"reward": "tier", "limits": {"steps": 150}, "measure": {"preset": "training"}}'. Each prompt's label
names its problem ("level1/19"). reset() opens the session and returns its opening (the tools
written into the system message) as ChatML text, Qwen's template, ending where the assistant's reply
begins; step() hands the reply's text to the session and returns the tools' results as the next
user turn, "rewards" 0 until the step that ends the episode, which carries the session's reward and
closes it. Another chat format: subclass KagentAgentInstance, override render(messages, opening), and
name the subclass in an AgentExecutor of your own file.
"""
import asyncio
import json
import os
import weakref

from openrlhf.utils.agent import AgentInstanceBase, MultiTurnAgentExecutor

from kagent_client.client import Client
from kagent_client.env import messages_of_step
from kagent_client.text_episode import chatml, messages_with_tools, problem_of, session_options

__all__ = ["KagentAgentInstance", "AgentExecutor"]


def _options():
    text = os.environ.get("KAGENT_SESSION")
    try:
        config = json.loads(text) if text else {}
    except ValueError as e:
        raise ValueError(f"KAGENT_SESSION is not JSON: {e}") from None
    return session_options(config)


def _close_quietly(session):
    if not session.closed:
        try:
            session.close()
        except Exception:  # the service may be gone already; the reaper removes what is left
            pass


class KagentAgentInstance(AgentInstanceBase):
    client = None  # one Client for the executor's instances (its endpoints are read once)

    def __init__(self, *args, **kwargs):
        if KagentAgentInstance.client is None:
            endpoints, options = _options()
            KagentAgentInstance.client = Client(endpoints)
            KagentAgentInstance.options = options
        self.session = None
        self.answer = {}

    def render(self, messages, opening):
        """The text the model reads: the opening (opening=True) or the messages a step adds, after the
        model's reply. ChatML: the reply's own end token is in its tokens already."""
        return chatml(messages) if opening else "\n" + chatml(messages)

    async def reset(self, states, **kwargs):
        problem = problem_of({"label": states.get("label")})
        self.session = await asyncio.to_thread(self.client.open_session, problem, **self.options)
        # An executor that stops on its token budget never sees done: close the session when the
        # instance goes, rather than leave it to the service's idle reaper.
        weakref.finalize(self, _close_quietly, self.session)
        o = self.session.opening
        return {"observation": self.render(messages_with_tools(o["messages"], o["tools"]), True), "label": problem}

    async def step(self, state_dict, **kwargs):
        import torch  # OpenRLHF's rewards are tensors

        if self.session is None:
            raise RuntimeError("KagentAgentInstance.step before reset")
        answer = await asyncio.to_thread(self.session.step, text=state_dict["action_text"])
        self.answer = answer
        done = bool(answer.get("done"))
        reward = float(answer.get("reward") or 0.0) if done else 0.0
        if done:
            await asyncio.to_thread(_close_quietly, self.session)
        logs = {k: float(answer[k]) for k in ("steps", "evaluations") if k in answer}
        return {
            "rewards": torch.tensor(reward),
            "scores": torch.tensor(reward),
            "environment_feedback": "" if done else self.render(messages_of_step(answer), False),
            "done": done,
            "sampling_params": state_dict.get("sampling_params"),
            "extra_logs": logs,
        }


class AgentExecutor(MultiTurnAgentExecutor):
    def __init__(self):
        super().__init__(KagentAgentInstance)
