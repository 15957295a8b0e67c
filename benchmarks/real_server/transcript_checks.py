"""What a finished `kagent optimize` run folder must show, read from its files alone.

transcript.jsonl (src/agent/transcript.cpp, src/agent/agent.cpp): a "start" event, the opening
system and user messages, then per turn the model's reply (a "message" event with role assistant,
its turn number, stop_reason, tokens, latency and attempts) followed by one tool message per tool
call (or a user nudge after a text-only reply), then "session_end" and "stop" with the reason. A
request is the conversation so far, so it is recorded when every message it carries is: each
reply must be preceded by new input and each tool call answered.
"""
import json
import os
import re

REPLY_FIELDS = ("turn", "stop_reason", "input_tokens", "output_tokens", "latency_s", "attempts")


def read_jsonl(path):
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def is_reply(event):
    return event.get("type") == "message" and event.get("message", {}).get("role") == "assistant"


def is_empty_reply(event):
    m = event["message"]
    return not (m.get("content") or "").strip() and not m.get("tool_calls")


def reply_estimated(event):
    """Whether kagent marked this reply's token counts as estimated (a stream without usage)."""
    return bool(event.get("tokens_estimated"))


def files_containing(root, secret):
    """Every file under root whose bytes contain secret."""
    hits = []
    needle = secret.encode()
    for folder, _, names in os.walk(root):
        for name in names:
            path = os.path.join(folder, name)
            try:
                with open(path, "rb") as f:
                    if needle in f.read():
                        hits.append(os.path.relpath(path, root))
            except OSError:
                hits.append(os.path.relpath(path, root) + " (unreadable)")
    return sorted(hits)


def check_stop_reason(reason, replies, tool_messages, max_turns):
    """Problems with the stop reason given what the transcript shows (empty list: consistent)."""
    if reason == "turn budget":
        return [] if len(replies) == max_turns else [f"stopped for the turn budget after {len(replies)} of {max_turns} turns"]
    if reason == "finish":
        done = [t for t in tool_messages if t["message"].get("tool_name") == "finish" and not t["message"].get("is_error")]
        return [] if done else ["stop reason finish without a successful finish call"]
    m = re.fullmatch(r"(\d+) malformed tool calls in a row", reason)
    if m:
        n = int(m.group(1))
        last = tool_messages[-n:]
        return [] if len(last) == n and all(t.get("malformed") for t in last) else [
            f"stop reason '{reason}' but the last {n} tool results are not all malformed"]
    m = re.search(r"(\d+) empty replies", reason)
    if m:
        n = int(m.group(1))
        last = replies[-n:]
        return [] if len(last) == n and all(is_empty_reply(r) for r in last) else [
            f"stop reason '{reason}' but the last {n} replies are not all empty"]
    return [f"unexpected stop reason '{reason}'"]


def check_run(run_dir, api_key, max_turns, aborted=False):
    """Summary of one run folder: figures for the table and the problems found (none: it passed).
    `aborted`: kagent exited on an error (exit 2 or 3), which by design leaves the folder as a
    killed run (resumable: no stop, session_end or result.json); the rest must still hold."""
    problems = []
    summary = {"requests": 0, "input_tokens": 0, "output_tokens": 0, "estimated": False, "stop_reason": "-",
               "empty_replies": 0, "tool_calls": {}, "problems": problems}
    transcript = os.path.join(run_dir, "transcript.jsonl")
    result_path = os.path.join(run_dir, "result.json")
    if not os.path.exists(transcript):
        problems.append("no transcript.jsonl")
        return summary
    events = read_jsonl(transcript)
    types = [e.get("type") for e in events]
    if not types or types[0] != "start":
        problems.append("the transcript does not begin with a start event")
    if not aborted and ("stop" not in types or types[-1] != "stop"):
        problems.append("the transcript does not end with a stop event")
    if not aborted and "session_end" not in types:
        problems.append("no session_end event")

    replies = [e for e in events if is_reply(e)]
    summary["requests"] = len(replies)
    summary["input_tokens"] = sum(r.get("input_tokens", 0) for r in replies)
    summary["output_tokens"] = sum(r.get("output_tokens", 0) for r in replies)
    summary["estimated"] = any(reply_estimated(r) for r in replies)
    summary["empty_replies"] = sum(1 for r in replies if is_empty_reply(r))
    for r in replies:
        missing = [k for k in REPLY_FIELDS if k not in r]
        if missing:
            problems.append(f"turn {r.get('turn', '?')}: the reply lacks {', '.join(missing)}")
        if "empty" in r and r["empty"] != is_empty_reply(r):
            problems.append(f"turn {r.get('turn', '?')}: marked empty={r['empty']}, but it is not so")
    if [r.get("turn") for r in replies] != list(range(1, len(replies) + 1)):
        problems.append(f"reply turns are not 1..{len(replies)} in order: {[r.get('turn') for r in replies]}")

    # Walk the conversation: what each request carried, and that each tool call was answered.
    messages = [e for e in events if e.get("type") == "message"]
    roles_before_first = {e["message"].get("role") for e in messages[: messages.index(replies[0])]} if replies else set()
    if replies and not {"system", "user"} <= roles_before_first:
        problems.append("the first request's system and user messages are not recorded")
    tool_messages = []
    open_calls = {}
    new_input = True
    for e in messages:
        m = e["message"]
        role = m.get("role")
        if role == "assistant":
            if open_calls:
                problems.append(f"turn {e.get('turn')}: sent before tool calls {sorted(open_calls)} were answered")
            if not new_input:
                problems.append(f"turn {e.get('turn')}: no new input recorded since the previous reply")
            open_calls = {c.get("id"): c.get("name") for c in m.get("tool_calls") or []}
            for name in open_calls.values():
                summary["tool_calls"][name] = summary["tool_calls"].get(name, 0) + 1
            new_input = False
        else:
            new_input = True
            if role == "tool":
                tool_messages.append(e)
                if open_calls.pop(m.get("tool_call_id"), None) is None:
                    problems.append(f"a tool result for a call that was not made: {m.get('tool_call_id')}")
    if open_calls:
        problems.append(f"tool calls never answered: {sorted(open_calls)}")

    stop = events[-1] if types and types[-1] == "stop" else {}
    summary["stop_reason"] = stop.get("reason", "-")
    if stop:
        problems.extend(check_stop_reason(summary["stop_reason"], replies, tool_messages, max_turns))

    if not os.path.exists(result_path):
        if not aborted:
            problems.append("no result.json")
    else:
        with open(result_path) as f:
            result = json.load(f)
        checks = [("requests", len(replies)), ("stop_reason", summary["stop_reason"]),
                  ("input_tokens", summary["input_tokens"]), ("output_tokens", summary["output_tokens"])]
        if "tokens_estimated" in result:
            checks.append(("tokens_estimated", summary["estimated"]))
        for key, want in checks:
            if result.get(key) != want:
                problems.append(f"result.json {key} is {result.get(key)!r}, the transcript says {want!r}")

    leaks = files_containing(run_dir, api_key)
    if leaks:
        problems.append(f"the API key is in {', '.join(leaks)}")
    return summary
