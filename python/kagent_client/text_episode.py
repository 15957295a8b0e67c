"""What the trainer adapters share (standard library only): where a dataset row names its problem, the
session options a trainer's config gives, and the episode as text for trainers whose model reads a
prompt rather than structured messages and tools.

Trainers that sample text (SkyRL's text environments, OpenRLHF's agent executor) hand kagent the
reply as decoded text, which the session reads for <tool_call> blocks (docs/environment.md). Their
model must see the tools in its prompt: `messages_with_tools` writes the schemas into the system
message in the words of Qwen's and Hermes' chat templates (the form those templates render for
`tools=`), so that a model trained on them calls the tools the way kagent reads them.
"""
import json
import os

__all__ = ["problem_of", "session_options", "tools_block", "messages_with_tools", "chatml", "SESSION_FIELDS"]

# The fields of POST /v1/sessions a trainer's config may set (docs/environment.md).
SESSION_FIELDS = ("precision", "atol", "rtol", "tolerance", "trials", "timing", "timeout_s", "measure", "limits",
                  "reward", "shell", "kind")


def problem_of(row):
    """The problem a dataset row names: "problem", then extra_info.problem, then the ground truth of
    reward_spec (SkyRL) or reward_model (verl), then "label" (OpenRLHF). Raises ValueError naming the
    keys looked at when none is there."""
    if isinstance(row, str):
        return row
    for path in (("problem",), ("extra_info", "problem"), ("reward_spec", "ground_truth"),
                 ("reward_model", "ground_truth"), ("label",)):
        value = row
        for key in path:
            value = value.get(key) if hasattr(value, "get") else None
        if isinstance(value, str) and value:
            return value
    raise ValueError("kagent: the dataset row names no problem (looked at problem, extra_info.problem, "
                     "reward_spec.ground_truth, reward_model.ground_truth, label)")


def session_options(config=None):
    """The session fields and the endpoints a trainer's config gives: a mapping (a dict or an omegaconf
    DictConfig) with "endpoints" and any of SESSION_FIELDS; KAGENT_ENDPOINTS when it has no endpoints.
    Returns (endpoints, options)."""
    config = config or {}
    endpoints = config.get("endpoints") or os.environ.get("KAGENT_ENDPOINTS")
    options = {}
    for key in SESSION_FIELDS:
        value = config.get(key)
        if value is not None:
            options[key] = _plain(value)
    return endpoints, options


def _plain(value):
    """omegaconf containers as dicts and lists (json must be able to send them)."""
    if hasattr(value, "items"):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)) or type(value).__name__ == "ListConfig":
        return [_plain(v) for v in value]
    return value


def tools_block(tools):
    """The tools in the words Qwen's and Hermes' chat templates render for `tools=`."""
    lines = "\n".join(json.dumps(t, ensure_ascii=False) for t in tools)
    return ("# Tools\n\nYou may call one or more functions to assist with the user query.\n\n"
            "You are provided with function signatures within <tools></tools> XML tags:\n<tools>\n" + lines +
            "\n</tools>\n\nFor each function call, return a json object with function name and arguments within "
            "<tool_call></tool_call> XML tags:\n<tool_call>\n{\"name\": <function-name>, \"arguments\": "
            "<args-json-object>}\n</tool_call>")


def messages_with_tools(messages, tools):
    """The opening messages with the tools written at the end of the system message (one is added
    when there is none)."""
    out = [dict(m) for m in messages]
    block = tools_block(tools)
    if out and out[0].get("role") == "system":
        out[0]["content"] = out[0]["content"] + "\n\n" + block
    else:
        out.insert(0, {"role": "system", "content": block})
    return out


def chatml(messages, generation_prompt=True):
    """Messages as ChatML text (Qwen's template): tool results inside one user turn, each in
    <tool_response> tags. With generation_prompt the text ends where the assistant's reply begins."""
    out = []
    n = 0
    while n < len(messages):
        m = messages[n]
        if m["role"] == "tool":
            parts = []
            while n < len(messages) and messages[n]["role"] == "tool":
                parts.append("<tool_response>\n" + messages[n]["content"] + "\n</tool_response>")
                n += 1
            out.append("<|im_start|>user\n" + "\n".join(parts) + "<|im_end|>\n")
            continue
        out.append("<|im_start|>" + m["role"] + "\n" + (m.get("content") or "") + "<|im_end|>\n")
        n += 1
    if generation_prompt:
        out.append("<|im_start|>assistant\n")
    return "".join(out)
