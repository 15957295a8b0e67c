"""kagent's agent episode as a SkyRL text environment (skyrl-gym's BaseTextEnv: init, step, close;
docs/environment.md). Importing this module imports skyrl_gym; `register()` adds the environment to
skyrl-gym's registry under "kagent" (or the id given):

    import kagent_client.skyrl_env
    kagent_client.skyrl_env.register()
    env = skyrl_gym.make("kagent", env_config={"endpoints": "http://gpu1:8080", "reward": "tier"},
                         extras={"extra_info": {"problem": "level1/19"}})

The dataset row (extras) names the problem (kagent_client.text_episode.problem_of: "problem",
extra_info.problem or reward_spec.ground_truth); env_config gives the endpoints (else
$KAGENT_ENDPOINTS) and the session's fields (reward, limits, measure, precision, ...). init() opens
the session and returns its opening messages, the tools written into the system message, in place
of the dataset's prompt; step(action) hands the model's text to the session (kagent reads its
<tool_call> blocks) and returns the tools' results as "tool" messages (and kagent's "user" feedback
when the reply did no work); the step that ends the episode carries its reward, every other 0.0.
close() closes the session.
"""
from skyrl_gym import register as _skyrl_register
from skyrl_gym.envs.base_text_env import BaseTextEnv, BaseTextEnvStepOutput

from kagent_client.client import Client
from kagent_client.env import info_of_step, messages_of_step
from kagent_client.text_episode import messages_with_tools, problem_of, session_options

__all__ = ["KagentTextEnv", "register"]


class KagentTextEnv(BaseTextEnv):
    def __init__(self, env_config=None, extras=None):
        super().__init__()
        extras = extras or {}
        self.problem = problem_of(extras)
        endpoints, self.options = session_options(env_config)
        self.client = Client(endpoints)
        self.session = None
        self.last = {}
        self.summary = None

    def init(self, prompt):
        self.session = self.client.open_session(self.problem, **self.options)
        opening = self.session.opening
        self.max_turns = opening["limits"]["steps"]
        metadata = {"session_id": self.session.id, "problem": self.problem, "limits": opening["limits"],
                    "reward_rule": opening["reward"], "tools": opening["tools"]}
        return messages_with_tools(opening["messages"], opening["tools"]), metadata

    def step(self, action):
        if self.session is None:
            raise RuntimeError("KagentTextEnv.step before init")
        self.turns += 1
        answer = self.session.step(text=action)
        self.last = answer
        done = bool(answer.get("done"))
        reward = float(answer.get("reward") or 0.0) if done else 0.0
        metadata = info_of_step(answer)
        return BaseTextEnvStepOutput(observations=[] if done else messages_of_step(answer), reward=reward, done=done,
                                     metadata=metadata, postprocessed_action=action)

    def close(self):
        if self.session is not None and not self.session.closed:
            self.summary = self.session.close()

    def get_metrics(self):
        answer = self.last
        return {"steps": answer.get("steps", 0), "evaluations": answer.get("evaluations", 0),
                "finished": float(answer.get("done_reason") == "finish")}


def register(env_id="kagent"):
    """Adds KagentTextEnv to skyrl-gym's registry under env_id."""
    _skyrl_register(id=env_id, entry_point="kagent_client.skyrl_env:KagentTextEnv")
