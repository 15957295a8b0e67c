"""The agent's episode as a Gymnasium-style environment over `kagent serve` sessions
(docs/environment.md). Standard library only; `gymnasium_env()` wraps it in gymnasium.Env when
gymnasium is installed.

    env = KernelEnv(["level1/19", "level1/23"], endpoints="http://gpu1:8080")
    obs, info = env.reset(seed=0)          # obs: {"messages": [system, task], "tools": [schemas]}
    obs, reward, terminated, truncated, info = env.step({"tool_calls": [...]})   # or the reply's text
    env.close()

An observation after a step is the list of messages to append for the model: one {"role": "tool",
"tool_call_id", "name", "content"} per call, and a {"role": "user"} message when the reply did no
work (kagent's words for the model). The reward is 0.0 until the episode ends, then the session's
reward (its rule: "tier" by default); terminated: the model finished; truncated: a limit ended it.
"""
import random

from .client import Client

__all__ = ["KernelEnv", "gymnasium_env", "messages_of_step", "info_of_step"]


def messages_of_step(answer):
    """The messages a step's answer adds to the conversation."""
    out = [{"role": "tool", "tool_call_id": o["tool_call_id"], "name": o.get("name"), "content": o["content"]}
           for o in answer.get("observations", [])]
    if answer.get("feedback"):
        out.append({"role": "user", "content": answer["feedback"]})
    return out


def info_of_step(answer):
    """What a step's answer says about the episode besides its messages and reward."""
    return {k: answer[k] for k in ("steps", "evaluations", "done_reason", "final", "best", "reward_note") if k in answer}


class KernelEnv:
    """KernelEnv(problems, client=None, endpoints=None, **session_options)

    problems: a problem name ("level1/19") or a list; reset() takes them in turn, or at random with
    a seed. session_options: the fields of POST /v1/sessions (limits, reward, precision, ...)."""

    metadata = {"render_modes": []}

    def __init__(self, problems, client=None, endpoints=None, **session_options):
        self.problems = [problems] if isinstance(problems, str) else list(problems)
        if not self.problems:
            raise ValueError("KernelEnv: no problems")
        self.client = client or Client(endpoints)
        self.session_options = session_options
        self.session = None
        self.summary = None
        self._turn = 0
        self._rng = random.Random()

    def reset(self, seed=None, options=None):
        """Closes the episode in progress and opens the next: (observation, info)."""
        self.close()
        if seed is not None:
            self._rng.seed(seed)
            problem = self._rng.choice(self.problems)
        else:
            problem = self.problems[self._turn % len(self.problems)]
        self._turn += 1
        opts = dict(self.session_options)
        opts.update((options or {}).get("session", {}))
        problem = (options or {}).get("problem", problem)
        self.session = self.client.open_session(problem, **opts)
        o = self.session.opening
        info = {"session_id": self.session.id, "problem": problem, "limits": o["limits"], "reward_rule": o["reward"]}
        return {"messages": o["messages"], "tools": o["tools"]}, info

    def step(self, action):
        """action: {"tool_calls": [...]}, {"tool_call": {...}}, {"text": "..."}, a list of calls, or
        the reply's text. Returns (observation, reward, terminated, truncated, info)."""
        if self.session is None:
            raise RuntimeError("KernelEnv.step before reset")
        if isinstance(action, str):
            answer = self.session.step(text=action)
        elif isinstance(action, list):
            answer = self.session.step(action)
        elif isinstance(action, dict) and len(action) == 1 and next(iter(action)) in ("tool_calls", "tool_call",
                                                                                         "text"):
            answer = self.session.step(**action)
        else:
            raise ValueError("KernelEnv.step: action is {'tool_calls': [...]}, {'tool_call': {...}}, "
                             "{'text': ...}, a list of calls or a string")
        done = bool(answer.get("done"))
        reward = answer.get("reward")
        info = info_of_step(answer)
        info["reward_missing"] = done and reward is None
        terminated = done and answer.get("done_reason") == "finish"
        truncated = done and not terminated
        return messages_of_step(answer), float(reward or 0.0), terminated, truncated, info

    def close(self):
        """Closes the session (idempotent): its summary is kept in .summary."""
        if self.session is not None and not self.session.closed:
            self.summary = self.session.close()
        self.session = None


def gymnasium_env(problems, **kwargs):
    """KernelEnv as a gymnasium.Env (gymnasium imported here): observations and actions are text
    structures, so the spaces are gymnasium.spaces.Text placeholders over the JSON the methods take."""
    import gymnasium

    class GymKernelEnv(gymnasium.Env):
        metadata = KernelEnv.metadata

        def __init__(self):
            super().__init__()
            self.inner = KernelEnv(problems, **kwargs)
            self.observation_space = gymnasium.spaces.Text(max_length=1 << 24)
            self.action_space = gymnasium.spaces.Text(max_length=1 << 24)

        def reset(self, *, seed=None, options=None):
            super().reset(seed=seed)
            return self.inner.reset(seed=seed, options=options)

        def step(self, action):
            return self.inner.step(action)

        def close(self):
            self.inner.close()

    return GymKernelEnv()
