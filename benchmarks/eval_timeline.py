#!/usr/bin/env python3
"""Where an evaluation's time goes: runs `kagent -v eval ...` and adds up, per step, the time between
each timestamped line of its debug log and the next (the children's "kagent-phase" steps, the
requests to them and their answers; child_client.cpp logs them). The children take turns (the
runner waits while the reference server makes a trial), so the segments are that process's steps.

    python3 benchmarks/eval_timeline.py --kagent build/kagent -- C1.cu C2.cu --op PROBLEM.py --preset training
        [--skip-first N]  leave out everything up to the N-th line matching --mark (the session's start)
        [--mark REGEX]    default: the runner's answer to an evaluate request (a plan's evaluation);
                          for ModelNew solutions "kagent-modelnew.*\\(time\\) answered"
        [--log FILE]      keep the raw log

Numbers in a step's text (trial 3, seed 123) are replaced by N so the trials add up. Standard library only.
"""
import argparse
import collections
import re
import subprocess
import sys
import time

LINE = re.compile(r"^kagent: (\d\d):(\d\d):(\d\d)\.(\d{3}) \w+: (.*)$")
CHILD = re.compile(r"^(kagent-[a-z]+)\[-?\d+\] (.*)$")


def label(text):
    m = CHILD.match(text)
    who, what = (m.group(1), m.group(2)) if m else ("kagent", text)
    what = re.sub(r"request \d+", "request", what)
    what = re.sub(r"answered in [0-9.]+ s", "answered", what)
    what = re.sub(r"/\S+", "PATH", what)
    what = re.sub(r"\d+", "N", what)
    return f"{who}: {what[:90]}"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kagent", required=True)
    ap.add_argument("--skip-first", type=int, default=0)
    ap.add_argument("--mark", default=r"kagent-runner.*\(evaluate\) answered")
    ap.add_argument("--log")
    ap.add_argument("--top", type=int, default=25)
    ap.add_argument("args", nargs=argparse.REMAINDER)
    a = ap.parse_args()
    args = a.args[1:] if a.args[:1] == ["--"] else a.args
    cmd = [a.kagent, "-v", "eval", *args, "--json"]
    t0 = time.monotonic()
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    out, err = p.communicate()
    wall = time.monotonic() - t0
    if a.log:
        with open(a.log, "w", encoding="utf-8") as f:
            f.write(err)
    events = []  # (seconds of the day, label)
    for line in err.splitlines():
        m = LINE.match(line)
        if m:
            h, mi, s, ms, text = m.groups()
            events.append((int(h) * 3600 + int(mi) * 60 + int(s) + int(ms) / 1e3, text))
    records = [l for l in out.splitlines() if l.startswith("{")]
    # The session's start: the log does not mark where a candidate's record was written; the N-th
    # line matching --mark (the end of an evaluation's last request) stands in for it.
    start = 0
    if a.skip_first > 0:
        seen, mark = 0, re.compile(a.mark)
        for i, (_, text) in enumerate(events):
            if mark.search(text):
                seen += 1
                if seen == a.skip_first:
                    start = i + 1
                    break
    span = events[start:]
    totals, counts = collections.Counter(), collections.Counter()
    for (t, text), (t_next, _) in zip(span, span[1:]):
        k = label(text)
        totals[k] += max(0.0, t_next - t)
        counts[k] += 1
    covered = span[-1][0] - span[0][0] if len(span) > 1 else 0.0
    print(f"exit {p.returncode}, {len(records)} record line(s), wall {wall:.2f} s; timeline {covered:.2f} s "
          f"after {start} leading event(s)")
    print(f"{'seconds':>8} {'share':>6} {'count':>5}  step (the time until the next logged line)")
    for k, v in totals.most_common(a.top):
        print(f"{v:8.3f} {100 * v / covered if covered else 0:5.1f}% {counts[k]:5d}  {k}")
    return 0 if p.returncode == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
