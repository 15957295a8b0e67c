"""OpenRLHF's remote reward model in front of `kagent serve`: POST /get_reward
{"query": [...], "prompts": [...], "labels": [...]} -> {"rewards": [...]}.

Each query is a prompt and its completion; the completion (the query less its prompt, when it
starts with it) is scored by compute_score with the label as the ground truth (a problem id such as
"level1/19", or a JSON object with "problem" and evaluation options). The queries of one call are
evaluated concurrently, spread over the endpoints.

    python -m kagent_client.reward_proxy --endpoints http://gpu1:8080,http://gpu2:8080 \\
        --reward log_speedup --port 5000
    # OpenRLHF: --remote_rm_url http://127.0.0.1:5000/get_reward
"""
import argparse
import json
import sys
from concurrent.futures import ThreadPoolExecutor
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from .client import Client, KagentError
from .rewards import REWARDS, compute_score

MAX_BODY_BYTES = 64 << 20


def rewards_for(body, client, reward, incorrect_reward, workers, preset=None):
    """The rewards of one /get_reward body (a dict); ValueError naming the field when malformed."""
    if not isinstance(body, dict):
        raise ValueError("body: expected a JSON object")
    query = body.get("query")
    if not isinstance(query, list) or not all(isinstance(q, str) for q in query):
        raise ValueError("query: expected a list of strings")
    prompts = body.get("prompts") or [""] * len(query)
    labels = body.get("labels")
    if not isinstance(prompts, list) or len(prompts) != len(query):
        raise ValueError("prompts: expected a list as long as query")
    if not isinstance(labels, list) or len(labels) != len(query):
        raise ValueError("labels: expected a list as long as query (each a problem, e.g. \"level1/19\")")

    def one(i):
        q, p = query[i], prompts[i] if isinstance(prompts[i], str) else ""
        completion = q[len(p):] if p and q.startswith(p) else q
        return compute_score(None, completion, labels[i], None, reward=reward, incorrect_reward=incorrect_reward,
                             client=client, preset=preset)

    with ThreadPoolExecutor(max_workers=max(1, min(workers, len(query) or 1))) as pool:
        return list(pool.map(one, range(len(query))))


def make_server(host, port, client, reward="tier", incorrect_reward=-1.0, workers=16, preset="training"):
    class Handler(BaseHTTPRequestHandler):
        def _send(self, status, obj):
            data = (json.dumps(obj) + "\n").encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_POST(self):  # noqa: N802 (http.server's name)
            if self.path.rstrip("/") != "/get_reward":
                return self._send(404, {"error": f"no such endpoint: {self.path} (POST /get_reward)"})
            length = int(self.headers.get("Content-Length") or 0)
            if length > MAX_BODY_BYTES:
                return self._send(413, {"error": f"body: over {MAX_BODY_BYTES} bytes"})
            try:
                body = json.loads(self.rfile.read(length) or b"null")
                return self._send(200, {"rewards": rewards_for(body, client, reward, incorrect_reward, workers,
                                                                   preset)})
            except ValueError as e:
                return self._send(400, {"error": str(e)})
            except KagentError as e:
                return self._send(503 if e.status in (0, 429, 503, 504) else 502, {"error": str(e)})

        def log_message(self, fmt, *args):  # quiet: one line per call on stderr is noise at RL rates
            pass

    return ThreadingHTTPServer((host, port), Handler)


def main(argv=None):
    ap = argparse.ArgumentParser(prog="kagent-reward-proxy", description=__doc__.split("\n\n")[0])
    ap.add_argument("--endpoints", default=None, help="kagent serve URLs, comma-separated (default $KAGENT_ENDPOINTS)")
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=5000)
    ap.add_argument("--reward", choices=REWARDS, default="tier", help="the reward (kagent_client.rewards)")
    ap.add_argument("--incorrect-reward", type=float, default=-1.0, help="reward of a failing candidate (log_speedup)")
    ap.add_argument("--workers", type=int, default=16, help="evaluations of one call in flight at once")
    ap.add_argument("--token-env", default="KAGENT_TOKEN", help="variable holding kagent serve's bearer token")
    ap.add_argument("--preset", default="training", help="the measurement preset of every evaluation (kagent eval "
                    "--preset; default training)")
    a = ap.parse_args(argv)
    client = Client(a.endpoints, token_env=a.token_env)
    server = make_server(a.host, a.port, client, a.reward, a.incorrect_reward, a.workers, a.preset)
    print(f"kagent-reward-proxy: POST http://{a.host}:{server.server_address[1]}/get_reward -> "
          f"{', '.join(client.endpoints)} (reward {a.reward}, preset {a.preset})", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
