"""kagent's agent episode as a verl agent loop, registered as `agent_name: kagent` (verl 0.9's
verl.experimental.agent_loop; docs/environment.md). Importing this module imports verl.

Each trajectory opens a session for the problem its dataset row names (problem, extra_info.problem
or reward_model.ground_truth), takes the session's opening messages and tool schemas in place of the
row's prompt, and runs verl's own ToolAgentLoop over them: verl samples, tokenizes and parses the
tool calls; each reply's calls go to the session as one step, in order, and each comes back as the
text `kagent optimize` gives its model (cut by verl's multi_turn.max_tool_response_length, as verl
cuts any tool's answer: raise it to the session's observation_bytes, 24576 by default). The
trajectory ends when the model finishes, a session limit ends the episode, or verl's own limits end
it; the session is closed in `finally` and the reward (the session's rule: the final candidate's
tier by default) is the trajectory's reward_score.

The agent loop config (actor_rollout_ref.rollout.agent.agent_loop_config_path) names it and gives
the session's fields; `python -m kagent_client.verl_config` writes it and the tool config:

    - name: kagent
      _target_: kagent_client.verl_agent_loop.KagentAgentLoop
      endpoints: http://gpu1:8080,http://gpu2:8080
      session: {reward: tier, limits: {steps: 150}, measure: {preset: training}}
"""
import asyncio

from verl.experimental.agent_loop.agent_loop import register
from verl.experimental.agent_loop.tool_agent_loop import AgentState, ToolAgentLoop
from verl.tools.base_tool import BaseTool
from verl.tools.schemas import OpenAIFunctionToolSchema, ToolResponse

from kagent_client.client import Client
from kagent_client.text_episode import problem_of, session_options

__all__ = ["KagentAgentLoop", "KagentTool"]


class KagentTool(BaseTool):
    """A kagent tool as verl's tool config names it (kagent_client.verl_config writes the config): its
    schema is the session's; its calls run in the session of a `kagent` trajectory, never here."""

    async def execute(self, instance_id, parameters, **kwargs):
        return (ToolResponse(text=f"kagent: {self.name} runs only in an episode of agent_name kagent "
                             "(kagent_client.verl_agent_loop.KagentAgentLoop)"), 0.0, {})


class _SchemaTool:
    """What ToolAgentLoop reads of a tool to parse and route calls: its name and schema."""

    def __init__(self, schema):
        self.name = schema["function"]["name"]
        self.tool_schema = OpenAIFunctionToolSchema.model_validate(schema)


@register("kagent")
class KagentAgentLoop(ToolAgentLoop):
    clients = {}  # one Client per endpoints value, shared by the trajectories of a worker

    def __init__(self, *args, endpoints=None, session=None, name=None, **kwargs):
        super().__init__(*args, **kwargs)
        config = dict(session or {})
        if endpoints:
            config["endpoints"] = endpoints
        endpoints, self.session_fields = session_options(config)
        key = endpoints or ""
        if key not in KagentAgentLoop.clients:
            KagentAgentLoop.clients[key] = Client(endpoints)
        self.client = KagentAgentLoop.clients[key]
        self.session = None
        self.answer = {}
        self.observations = {}

    async def run(self, sampling_params, **kwargs):
        problem = problem_of(kwargs)
        self.session = await asyncio.to_thread(self.client.open_session, problem, **self.session_fields)
        summary = None
        try:
            opening = self.session.opening
            self.schemas = opening["tools"]
            self.tools = {t["function"]["name"]: _SchemaTool(t) for t in self.schemas}
            self.tool_schemas = self.schemas
            kwargs = dict(kwargs, raw_prompt=opening["messages"])
            kwargs.pop("extra_info", None)  # its tool_selection would pick among verl's tools, not kagent's
            output = await super().run(sampling_params, **kwargs)
        finally:
            summary = await asyncio.to_thread(self._close)
        reward = (summary or {}).get("reward", self.answer.get("reward"))
        if reward is not None:
            output.reward_score = float(reward)
        output.extra_fields.update({
            "kagent_session": self.session.id,
            "kagent_done_reason": (summary or {}).get("done_reason", ""),
            "kagent_steps": (summary or {}).get("steps", 0),
            "kagent_evaluations": (summary or {}).get("evaluations", 0),
        })
        return output

    def _close(self):
        try:
            return self.session.close()
        except Exception:  # the service may be gone; its reaper removes what is left
            return None

    async def _handle_processing_tools_state(self, agent_data):
        # One step for the reply's calls, in order, as kagent optimize runs a reply; verl then builds
        # its tool messages from the observations (_call_tool below).
        calls = agent_data.tool_calls[: self.max_parallel_calls]
        body = [{"name": c.name, "arguments": c.arguments} for c in calls]
        for n, c in enumerate(calls):
            if getattr(c, "tool_call_id", None):
                body[n]["id"] = c.tool_call_id
        answer = await asyncio.to_thread(self.session.step, body)
        self.answer = answer
        self.observations = {id(c): o for c, o in zip(calls, answer.get("observations", []))}
        state = await super()._handle_processing_tools_state(agent_data)
        return AgentState.TERMINATED if answer.get("done") else state

    async def _call_tool(self, tool_call, tools_kwargs, agent_data):
        o = self.observations.get(id(tool_call))
        text = o["content"] if o else "kagent: this call was not run"
        limit = self.max_tool_response_length
        if len(text) > limit:  # verl's own cut of a tool's answer
            if self.tool_response_truncate_side == "left":
                text = "(truncated)..." + text[-limit:]
            elif self.tool_response_truncate_side == "right":
                text = text[:limit] + "...(truncated)"
            else:
                half = limit // 2
                text = text[:half] + "...(truncated)..." + text[-half:]
        return ToolResponse(text=text), 0.0, {"is_error": bool(o and o.get("is_error"))}

