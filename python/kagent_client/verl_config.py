"""Writes verl's configuration for kagent's episodes (standard library only; docs/environment.md):

    python -m kagent_client.verl_config --endpoints http://gpu1:8080 --problem level1/19 --out conf/ \\
        [--session '{"reward": "tier", "measure": {"preset": "training"}}']

opens one session to read the tools and the limits the service gives (then closes it), and writes
conf/kagent_tools.yaml (multi_turn.tool_config_path: the session's tool schemas) and
conf/kagent_agent_loop.yaml (agent.agent_loop_config_path: agent_name kagent with the endpoints and
session fields), then prints the overrides verl needs. The files are JSON, which YAML reads.
"""
import argparse
import json
import os
import sys

from .client import Client, KagentError

__all__ = ["tool_config", "agent_loop_config", "overrides", "main"]

TOOL_CLASS = "kagent_client.verl_agent_loop.KagentTool"
LOOP_CLASS = "kagent_client.verl_agent_loop.KagentAgentLoop"


def tool_config(tools):
    """verl's tool config for kagent's tool schemas."""
    return {"tools": [{"class_name": TOOL_CLASS, "config": {"type": "native"}, "tool_schema": t} for t in tools]}


def agent_loop_config(endpoints, session_fields):
    return [{"name": "kagent", "_target_": LOOP_CLASS, "endpoints": endpoints, "session": session_fields}]


def overrides(folder, limits):
    """The verl settings an episode needs: its tools' answers are cut at the session's observation size
    by kagent, so verl must not cut them at its own 256 characters; a reply may carry several calls
    (kagent runs up to 32 of one reply, verl 1 by default); the tool calls are Hermes' blocks."""
    return [
        "actor_rollout_ref.rollout.multi_turn.enable=True",
        "actor_rollout_ref.rollout.multi_turn.format=hermes",
        f"actor_rollout_ref.rollout.multi_turn.tool_config_path={os.path.join(folder, 'kagent_tools.yaml')}",
        f"actor_rollout_ref.rollout.multi_turn.max_tool_response_length={limits['observation_bytes']}",
        "actor_rollout_ref.rollout.multi_turn.max_parallel_calls=32",
        f"actor_rollout_ref.rollout.multi_turn.max_assistant_turns={limits['steps']}",
        f"actor_rollout_ref.rollout.agent.agent_loop_config_path={os.path.join(folder, 'kagent_agent_loop.yaml')}",
        "actor_rollout_ref.rollout.agent.default_agent_loop=kagent",
    ]


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m kagent_client.verl_config", description=__doc__.split("\n\n")[0])
    ap.add_argument("--endpoints", default=os.environ.get("KAGENT_ENDPOINTS"), help="default: $KAGENT_ENDPOINTS")
    ap.add_argument("--problem", required=True, help="a problem the service serves (its tools are every problem's)")
    ap.add_argument("--out", required=True, help="folder for the two files")
    ap.add_argument("--session", default="{}", help="the session's fields as JSON (reward, limits, measure, ...)")
    a = ap.parse_args(argv)
    try:
        fields = json.loads(a.session)
    except ValueError as e:
        ap.error(f"--session is not JSON: {e}")
    if not isinstance(fields, dict):
        ap.error("--session: expected a JSON object")
    if not a.endpoints:
        ap.error("--endpoints (or $KAGENT_ENDPOINTS) is required")
    try:
        with Client(a.endpoints).open_session(a.problem, **fields) as s:
            tools, limits = s.opening["tools"], s.opening["limits"]
    except KagentError as e:
        print(f"kagent: could not open a session for {a.problem}: {e}", file=sys.stderr)
        return 3 if getattr(e, "status", None) in (None, 503) else 2
    os.makedirs(a.out, exist_ok=True)
    folder = os.path.abspath(a.out)
    for name, content in (("kagent_tools.yaml", tool_config(tools)),
                          ("kagent_agent_loop.yaml", agent_loop_config(a.endpoints, fields))):
        with open(os.path.join(folder, name), "w") as f:
            json.dump(content, f, indent=2)
            f.write("\n")
    print("\n".join(overrides(folder, limits)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
