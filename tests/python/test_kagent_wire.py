"""tools/kagent_wire: what the Python children share (the framing and the dispatch of commands;
the statistics are checked against the C++ twin in test_ref_stats_parity.cpp)."""

import io
import json
import sys
import unittest

from kagent_wire import jsonlines


class Dispatch(unittest.TestCase):
    def test_ping_unknown_and_a_handler(self):
        self.assertEqual(jsonlines.dispatch({"cmd": "ping"}, {}), {})
        self.assertEqual(jsonlines.dispatch({"cmd": "load", "x": 2}, {"load": lambda r: {"got": r["x"]}}), {"got": 2})
        with self.assertRaisesRegex(ValueError, "unknown cmd 'trail'"):
            jsonlines.dispatch({"cmd": "trail"}, {"trial": lambda r: {}})


class Serve(unittest.TestCase):
    def test_every_line_gets_a_reply_and_failures_do_not_stop_the_loop(self):
        out = io.StringIO()
        stdin = sys.stdin
        sys.stdin = io.StringIO('{"id": 1, "cmd": "ping"}\nnot json\n{"id": 3, "cmd": "boom"}\n{"id": 4, "cmd": "ping"}\n')
        try:
            jsonlines.serve(out, {"hello": "test"}, lambda req: jsonlines.dispatch(req, {}))
        finally:
            sys.stdin = stdin
        lines = [json.loads(x) for x in out.getvalue().splitlines()]
        self.assertEqual(lines[0], {"hello": "test"})
        self.assertEqual([(r.get("id"), r["ok"]) for r in lines[1:]], [(1, True), (None, False), (3, False), (4, True)])
        self.assertIn("unknown cmd 'boom'", lines[3]["error"])


if __name__ == "__main__":
    unittest.main()
