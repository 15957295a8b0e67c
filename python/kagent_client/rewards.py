"""RL rewards from `kagent serve`'s records, and verl's reward-function entry point.

The reward is chosen, not fixed (argument `reward`, extra_info["kagent"]["reward"] or
$KAGENT_REWARD):
  "tier"                 the CUDA Agent paper's tier: -1 incorrect (or not compiled), 1 correct,
                         2 faster than torch eager, 3 also at most 0.95x torch.compile (default);
  "log_speedup"          correct candidates: ln(speedup vs torch eager) (0 when not timed), so
                         2x faster is +0.69 and 2x slower -0.69; others `incorrect_reward` (-1);
  "log_speedup_compile"  the same against torch.compile.
A completion without a fenced code block, a candidate too large (413) or whose plan does not fit
the problem (422) earns `incorrect_reward` without or after asking. An unreachable service or one
without a GPU raises (Unavailable): a reward made up for the infrastructure's failure would
mislead the training.
"""
import json
import math
import os
import threading

from .client import Client, RequestRefused
from .completions import kind_of, last_code_block

__all__ = ["REWARDS", "compute_score", "kind_of", "last_code_block", "reward_of"]

REWARDS = ("tier", "log_speedup", "log_speedup_compile")

def reward_of(record, reward="tier", incorrect_reward=-1.0):
    """The reward of a `kagent eval --json` record (see the module's documentation)."""
    if reward not in REWARDS:
        raise ValueError(f"reward {reward!r}: expected one of {', '.join(REWARDS)}")
    tier = int(record.get("tier", -1))
    if reward == "tier":
        return float(tier)
    if tier <= 0:
        return float(incorrect_reward)
    speedup = record.get("speedup_vs_eager" if reward == "log_speedup" else "speedup_vs_compile")
    return math.log(speedup) if isinstance(speedup, (int, float)) and speedup > 0 else 0.0


_clients = {}
_clients_lock = threading.Lock()


def _client_for(endpoints, token):
    key = (tuple(endpoints) if isinstance(endpoints, (list, tuple)) else endpoints, token)
    with _clients_lock:
        if key not in _clients:
            _clients[key] = Client(endpoints, token=token)
        return _clients[key]


def _ground_truth(ground_truth):
    if isinstance(ground_truth, dict):
        gt = dict(ground_truth)
    elif isinstance(ground_truth, str) and ground_truth.lstrip().startswith("{"):
        gt = json.loads(ground_truth)
    else:
        gt = {"problem": str(ground_truth)}
    if not gt.get("problem"):
        raise ValueError(f"ground_truth {ground_truth!r}: expected a problem (\"level1/19\") or {{\"problem\": ...}}")
    return gt


def compute_score(data_source, solution_str, ground_truth, extra_info=None, *, endpoints=None, reward=None,
                  incorrect_reward=None, token=None, client=None, preset=None, **options):
    """verl's custom reward function: the reward of the last fenced code block of `solution_str`
    evaluated against the problem `ground_truth` names.

    ground_truth: "level1/19" (a KernelBench id or path under the service's problems root), or a
    dict / JSON object {"problem": ..., "precision": ..., "tolerance": ..., "timeout_s": ...,
    "measure": {...}} with any of evaluate()'s options. Settings, first found wins: the keyword
    arguments (verl's reward_kwargs), extra_info["kagent"] (a dict), then $KAGENT_ENDPOINTS,
    $KAGENT_REWARD, $KAGENT_INCORRECT_REWARD, $KAGENT_TOKEN, $KAGENT_PRESET. data_source is not used.
    preset: the measurement preset (`kagent eval --preset`), "training" unless set: the default
    protocol's checks with a shorter timing (docs/measurement.md); a "preset" in the ground truth's
    "measure" wins.
    """
    del data_source
    cfg = (extra_info or {}).get("kagent", {}) if isinstance(extra_info, dict) else {}
    reward = reward or cfg.get("reward") or os.environ.get("KAGENT_REWARD") or "tier"
    if incorrect_reward is None:
        incorrect_reward = cfg.get("incorrect_reward", os.environ.get("KAGENT_INCORRECT_REWARD", -1.0))
    incorrect_reward = float(incorrect_reward)
    if reward not in REWARDS:
        raise ValueError(f"reward {reward!r}: expected one of {', '.join(REWARDS)}")
    gt = _ground_truth(ground_truth)
    block = last_code_block(solution_str)
    if block is None:
        return incorrect_reward
    lang, code = block
    if client is None:
        client = _client_for(endpoints or cfg.get("endpoints"), token or cfg.get("token"))
    fields = {k: v for k, v in gt.items() if k != "problem"}
    fields.update(options)
    preset = preset or cfg.get("preset") or os.environ.get("KAGENT_PRESET") or "training"
    measure = dict(fields.get("measure") or {})
    measure.setdefault("preset", preset)
    fields["measure"] = measure
    try:
        record = client.evaluate(code, gt["problem"], kind_of(lang, code), **fields)
    except RequestRefused as e:
        if e.status in (413, 422):  # the candidate's own fault: too large, a plan that does not fit
            return incorrect_reward
        raise
    return reward_of(record, reward, incorrect_reward)
