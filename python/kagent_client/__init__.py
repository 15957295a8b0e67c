"""Client of `kagent serve`: evaluate CUDA kernel candidates on remote GPUs (docs/serve.md).

    from kagent_client import Client
    c = Client("http://gpu1:8080,http://gpu2:8080")
    record = c.evaluate(open("cand.cu").read(), problem="level1/19")   # `kagent eval --json`'s record

RL rewards: `compute_score` (verl) and `python -m kagent_client.reward_proxy` (OpenRLHF's /get_reward).
Agent episodes (docs/environment.md): `Client.open_session`, `KernelEnv`, and the trainer adapters,
imported only when used: kagent_client.verl_agent_loop, kagent_client.skyrl_env,
kagent_client/openrlhf_agent.py (by path), kagent_client.verl_config (writes verl's config).
"""
from .client import Client, KagentError, RequestRefused, Session, Unavailable, evaluate, evaluate_batch
from .env import KernelEnv, gymnasium_env
from .rewards import REWARDS, compute_score, kind_of, last_code_block, reward_of

__all__ = [
    "Client", "KagentError", "KernelEnv", "RequestRefused", "Session", "Unavailable", "evaluate", "evaluate_batch",
    "gymnasium_env",
    "REWARDS", "compute_score", "kind_of", "last_code_block", "reward_of",
]
