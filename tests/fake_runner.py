#!/usr/bin/env python3
"""A stand-in for kagent-runner that speaks its JSON-lines protocol (see
include/kagent/protocol/child_client.hpp) without a GPU, so ChildClient's timeouts, crashes,
restarts and sandbox can be tested in CI. Commands are chosen by the tests, one per behaviour."""
import json
import os
import resource
import signal
import subprocess
import sys
import time


def no_new_privs():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("NoNewPrivs:"):
                return int(line.split()[1])
    return -1


def reply(obj):
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def log(text):
    sys.stderr.write(text + "\n")
    sys.stderr.flush()


def phase(req):
    if "phase" in req:
        log("kagent-phase: " + req["phase"])


def sleep_forever():
    while True:
        time.sleep(3600)


def handle(req):
    rid = req.get("id")
    cmd = req.get("cmd")
    if cmd == "ping":
        reply({"id": rid, "ok": True})
    elif cmd == "env":
        reply({"id": rid, "ok": True, "env": dict(os.environ)})
    elif cmd == "limits":
        reply({"id": rid, "ok": True,
               "core": resource.getrlimit(resource.RLIMIT_CORE),
               "fsize": resource.getrlimit(resource.RLIMIT_FSIZE),
               "nproc": resource.getrlimit(resource.RLIMIT_NPROC),
               "no_new_privs": no_new_privs(),
               "pgid": os.getpgid(0), "pid": os.getpid()})
    elif cmd == "hang":
        if req.get("spawn"):
            # A grandchild in the runner's process group: a timeout must kill it too.
            child = subprocess.Popen(["sleep", "1000"])
            log("child-pid: %d" % child.pid)
        phase(req)
        sleep_forever()
    elif cmd == "crash":
        phase(req)
        os.kill(os.getpid(), signal.SIGSEGV)
        sleep_forever()
    elif cmd == "exit":
        sys.exit(req.get("code", 3))
    elif cmd == "sticky":
        reply({"id": rid, "ok": False, "error": "illegal address", "restart": True})
        sys.exit(0)
    elif cmd == "quit":
        # Replies, then exits: kagent's next write meets a closed pipe (EPIPE, not SIGPIPE).
        reply({"id": rid, "ok": True})
        sys.exit(0)
    elif cmd == "badjson":
        sys.stdout.write("not json\n")
        sys.stdout.flush()
    elif cmd == "wrongid":
        reply({"id": rid + 1000, "ok": True})
    elif cmd == "need":
        # Asks kagent `count` times in the middle of the request, then replies with the answers.
        answers = []
        for i in range(req.get("count", 2)):
            reply({"id": rid, "need": "trial", "trial": i})
            if req.get("slow_phase"):
                phase(req)
            answers.append(json.loads(sys.stdin.readline()))
        reply({"id": rid, "ok": True, "answers": answers})
    elif cmd == "log":
        for i in range(1, req.get("lines", 3) + 1):
            log("log line %d" % i)
            if i == 2:
                phase(req)
        reply({"id": rid, "ok": True})
    else:
        reply({"id": rid, "ok": False, "error": "unknown cmd %r" % cmd})


def main():
    if "--no-hello" in sys.argv[1:]:
        sleep_forever()
    reply({"hello": "kagent-runner", "version": "fake", "pid": os.getpid(),
           "sandbox": {"no_new_privs": no_new_privs() == 1, "netns": False,
                       "warning": "fake runner: no namespace"}})
    while True:
        line = sys.stdin.readline()
        if not line:
            return 0  # kagent closed our stdin: exit like the real runner
        handle(json.loads(line))


if __name__ == "__main__":
    sys.exit(main())
