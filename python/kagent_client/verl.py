"""verl's custom reward function file: verl loads it by path (not as part of a package), so it
imports the installed package absolutely.

    custom_reward_function:
      path: python/kagent_client/verl.py     # after `pip install ./python`
      name: compute_score
      reward_kwargs: {endpoints: "http://gpu1:8080,http://gpu2:8080", reward: log_speedup}
"""
from kagent_client.rewards import compute_score  # noqa: F401

__all__ = ["compute_score"]
