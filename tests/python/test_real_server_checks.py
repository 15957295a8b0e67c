"""benchmarks/real_server/transcript_checks.py on made-up run folders: the checks the real-server
script relies on must catch what they claim to (the script itself is too slow for CI)."""
import json
import os
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "benchmarks", "real_server"))
import transcript_checks  # noqa: E402

KEY = "kagent-fake-key-0123456789"


def message(role, content="", **extra):
    return {"type": "message", "message": dict({"role": role, "content": content}, **extra.pop("m", {})), **extra}


def reply(turn, content="", calls=(), **extra):
    m = {"tool_calls": [{"id": cid, "name": name, "arguments": {}} for cid, name in calls]} if calls else {}
    return message("assistant", content, m=m, turn=turn, stop_reason="tool_use" if calls else "end_turn",
                   input_tokens=100, output_tokens=10, latency_s=1.0, attempts=1, **extra)


def tool(cid, name, error=False, malformed=False):
    return message("tool", "ok", m={"tool_call_id": cid, "tool_name": name, "is_error": error}, record=None,
                   malformed=malformed)


def write_run(folder, events, result_overrides=None):
    with open(os.path.join(folder, "transcript.jsonl"), "w") as f:
        for e in events:
            f.write(json.dumps(e) + "\n")
    replies = [e for e in events if e.get("type") == "message" and e["message"]["role"] == "assistant"]
    result = {"requests": len(replies), "stop_reason": events[-1]["reason"],
              "input_tokens": sum(r["input_tokens"] for r in replies),
              "output_tokens": sum(r["output_tokens"] for r in replies)}
    result.update(result_overrides or {})
    with open(os.path.join(folder, "result.json"), "w") as f:
        json.dump(result, f)


def two_turns(stop="turn budget"):
    return [{"type": "start", "op": "x"}, message("system", "s"), message("user", "task"),
            reply(1, calls=[("c1", "write_file")]), tool("c1", "write_file"),
            reply(2, "thinking"), message("user", "Continue with a tool call"),
            {"type": "session_end", "wall_s": 2.0}, {"type": "stop", "reason": stop, "turns": 2}]


class TranscriptChecks(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.run = self.dir.name

    def tearDown(self):
        self.dir.cleanup()

    def check(self, events, max_turns=2, **overrides):
        write_run(self.run, events, overrides)
        return transcript_checks.check_run(self.run, KEY, max_turns)

    def test_a_consistent_run_passes(self):
        s = self.check(two_turns())
        self.assertEqual(s["problems"], [])
        self.assertEqual((s["requests"], s["input_tokens"], s["output_tokens"]), (2, 200, 20))
        self.assertEqual(s["tool_calls"], {"write_file": 1})

    def test_the_key_in_any_file_fails(self):
        os.makedirs(os.path.join(self.run, "workspace"))
        with open(os.path.join(self.run, "workspace", "notes.txt"), "w") as f:
            f.write("Bearer " + KEY)
        s = self.check(two_turns())
        self.assertTrue(any("workspace/notes.txt" in p for p in s["problems"]), s["problems"])

    def test_an_unanswered_tool_call_fails(self):
        events = two_turns()
        del events[4]  # the write_file result
        s = self.check(events)
        self.assertTrue(any("c1" in p for p in s["problems"]), s["problems"])

    def test_a_reply_without_new_input_fails(self):
        events = two_turns()
        del events[6]  # the nudge after the text-only reply, then a third reply
        events.insert(6, reply(3, "again"))
        s = self.check(events, max_turns=3)
        self.assertTrue(any("no new input" in p for p in s["problems"]), s["problems"])

    def test_the_stop_reason_must_fit_the_transcript(self):
        self.assertTrue(self.check(two_turns(), max_turns=5)["problems"])  # budget 5, stopped after 2
        self.assertTrue(self.check(two_turns("finish"))["problems"])  # no finish call
        self.assertTrue(self.check(two_turns("2 empty replies in a row"))["problems"])  # not empty
        self.assertTrue(self.check(two_turns("something else"))["problems"])

    def test_empty_replies_stop(self):
        events = two_turns("2 empty replies in a row")
        events[5:7] = [reply(2), message("user", "nudge"), reply(3), message("user", "nudge")]
        events[3:5] = [reply(1, "text"), message("user", "nudge")]
        s = self.check(events, max_turns=5)
        self.assertEqual(s["problems"], [])
        self.assertEqual(s["empty_replies"], 2)

    def test_estimated_tokens_are_seen_and_must_agree_with_result_json(self):
        events = two_turns()
        events[5]["tokens_estimated"] = True
        s = self.check(events, tokens_estimated=True)
        self.assertEqual(s["problems"], [])
        self.assertTrue(s["estimated"])
        s = self.check(events, tokens_estimated=False)
        self.assertTrue(any("tokens_estimated" in p for p in s["problems"]), s["problems"])

    def test_a_reply_marked_empty_must_be_empty(self):
        events = two_turns()
        events[5]["empty"] = True  # it has text
        s = self.check(events)
        self.assertTrue(any("marked empty" in p for p in s["problems"]), s["problems"])

    def test_a_run_ended_by_an_error_needs_no_stop_but_its_replies_still_count(self):
        events = two_turns()[:5]  # the endpoint failed on the second request
        with open(os.path.join(self.run, "transcript.jsonl"), "w") as f:
            f.write("".join(json.dumps(e) + "\n" for e in events))
        s = transcript_checks.check_run(self.run, KEY, 4, aborted=True)
        self.assertEqual(s["problems"], [])
        self.assertEqual(s["requests"], 1)
        self.assertTrue(transcript_checks.check_run(self.run, KEY, 4)["problems"])

    def test_result_json_must_agree(self):
        s = self.check(two_turns(), requests=5)
        self.assertTrue(any("result.json requests" in p for p in s["problems"]), s["problems"])


if __name__ == "__main__":
    unittest.main()
