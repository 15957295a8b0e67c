"""HTTP client of `kagent serve` over one or several endpoints.

Requests go round-robin over the endpoints. An endpoint that cannot be reached, answers 503 (no
GPU, GPU busy), 504 (waited too long for a GPU), 429 (queue full) or 5xx is skipped for
the next one; when every endpoint refused, the client waits (the largest Retry-After asked for, at
most `max_wait_s`) and goes round again, `rounds` times in all, then raises Unavailable. A 4xx
answer about the request itself (400 naming the field, 401, 404, 413, 422) is raised at once as
RequestRefused: another endpoint would say the same.
"""
import itertools
import json
import os
import re
import threading
import time
import urllib.error
import urllib.request

from .completions import kind_of

__all__ = ["Client", "KagentError", "RequestRefused", "Session", "Unavailable", "evaluate", "evaluate_batch"]

# Answers that say "not now, or not here": another endpoint (or later) may do.
_RETRY_STATUSES = {429, 500, 502, 503, 504}


class KagentError(Exception):
    """An error answer: .status (HTTP, 0 for a connection error), .field, .message, .body, and
    .retry_after (seconds, when the service said)."""

    def __init__(self, status, message, field=None, body=None, endpoint=None, retry_after=None):
        super().__init__(f"{endpoint + ': ' if endpoint else ''}{status} {message}")
        self.status, self.message, self.field, self.body, self.endpoint = status, message, field, body, endpoint
        self.retry_after = retry_after


class RequestRefused(KagentError):
    """The request itself was refused (4xx): a bad field, no such problem, too large, unauthorized."""


class Unavailable(KagentError):
    """No endpoint could evaluate: unreachable, no GPU (503), queue full (429), ..."""


def _endpoints(endpoints):
    if endpoints is None:
        endpoints = os.environ.get("KAGENT_ENDPOINTS", "http://127.0.0.1:8080")
    if isinstance(endpoints, str):
        endpoints = [e for e in re.split(r"[,\s]+", endpoints) if e]
    out = [e.rstrip("/") for e in endpoints]
    if not out:
        raise ValueError("no kagent serve endpoint given (endpoints=..., or KAGENT_ENDPOINTS)")
    return out


class Client:
    """Client(endpoints, token=None, token_env="KAGENT_TOKEN", timeout_s=1800, rounds=3, max_wait_s=60)

    endpoints: "http://a:8080,http://b:8080", a list, or None for $KAGENT_ENDPOINTS (default
    http://127.0.0.1:8080). token: the bearer token, else the variable token_env names (if set).
    timeout_s: the socket timeout of one HTTP request (an evaluation may queue, then take its own
    timeout_s on the GPU).
    """

    def __init__(self, endpoints=None, token=None, token_env="KAGENT_TOKEN", timeout_s=1800.0, rounds=3,
                 max_wait_s=60.0):
        self.endpoints = _endpoints(endpoints)
        self.token = token if token is not None else (os.environ.get(token_env) if token_env else None)
        self.timeout_s = timeout_s
        self.rounds = max(1, int(rounds))
        self.max_wait_s = max_wait_s
        self._next = itertools.count()
        self._lock = threading.Lock()

    # -- requests -------------------------------------------------------------------------------

    def evaluate(self, source, problem, kind=None, *, name=None, precision=None, atol=None, rtol=None,
                 tolerance=None, trials=None, timing=None, timeout_s=None, measure=None):
        """One candidate: `kagent eval --json`'s record (a dict; "tier" -1 to 3).

        source: the candidate's text; kind: "plan" (a .cu with its launch plan) or "modelnew" (a
        KernelBench ModelNew .py), guessed from the text when None. problem: "level1/19",
        "level1/19_ReLU.py" or a path under the service's problems root. measure: a dict of the
        measurement fields (docs/serve.md), e.g. {"min_samples": 10}.
        """
        body = request(source, problem, kind, name=name, precision=precision, atol=atol, rtol=rtol,
                       tolerance=tolerance, trials=trials, timing=timing, timeout_s=timeout_s, measure=measure)
        return self._post("/v1/evaluate", body)

    def evaluate_batch(self, requests):
        """Several candidates in one call, each a dict as request() makes (or keyword arguments of
        evaluate() as a dict): a list, in order, of records or {"error": {...}} for those refused."""
        bodies = [r if "kind" in r else request(**r) for r in requests]
        return self._post("/v1/evaluate_batch", {"requests": bodies})["results"]

    def open_session(self, problem, **options):
        """A session of the agent's episode on one endpoint (docs/environment.md): Session, whose
        .opening holds the "messages" and "tools" to start the model with. options: the fields of
        POST /v1/sessions (precision, tolerance, measure, limits, reward, shell, ...)."""
        body = {"problem": problem}
        body.update({k: v for k, v in options.items() if v is not None})
        endpoint, answer = self._post_any("/v1/sessions", body)
        return Session(self, endpoint, answer)

    def health(self):
        """Each endpoint's /health answer (a dict), or {"status": "unreachable", "reason": ...}."""
        out = {}
        for e in self.endpoints:
            try:
                out[e] = self._once(e, "/health", None)[1]
            except KagentError as err:
                out[e] = err.body if isinstance(err.body, dict) else {"status": "unreachable", "reason": str(err)}
        return out

    # -- transport ------------------------------------------------------------------------------

    def _order(self):
        with self._lock:
            start = next(self._next) % len(self.endpoints)
        return self.endpoints[start:] + self.endpoints[:start]

    def _post(self, path, body):
        return self._post_any(path, body)[1]

    def _post_any(self, path, body):
        """(endpoint, answer) of the first endpoint that took the request."""
        data = json.dumps(body).encode()
        last = None
        for round_ in range(self.rounds):
            wait_s = 1.0
            for endpoint in self._order():
                try:
                    return endpoint, self._once(endpoint, path, data)[1]
                except Unavailable as e:
                    last = e
                    if e.retry_after:
                        wait_s = max(wait_s, e.retry_after)
            if round_ + 1 < self.rounds:
                time.sleep(min(wait_s, self.max_wait_s))
        raise last

    def _once(self, endpoint, path, data):
        req = urllib.request.Request(endpoint + path, data=data, method="POST" if data is not None else "GET")
        req.add_header("Content-Type", "application/json")
        if self.token:
            req.add_header("Authorization", "Bearer " + self.token)
        try:
            with urllib.request.urlopen(req, timeout=self.timeout_s) as r:
                return r.status, json.loads(r.read().decode("utf-8", "replace"))
        except urllib.error.HTTPError as e:
            text = e.read().decode("utf-8", "replace")
            try:
                body = json.loads(text)
            except ValueError:
                body = {"error": {"message": text}}
            if not isinstance(body, dict):
                body = {"error": {"message": text}}
            err = body.get("error")
            if not isinstance(err, dict):
                err = {"message": str(err)} if err else {}
            message = err.get("message") or body.get("reason") or text
            if e.code in _RETRY_STATUSES:
                try:
                    retry_after = float(e.headers.get("Retry-After") or 0) or None
                except ValueError:
                    retry_after = None
                raise Unavailable(e.code, message, err.get("field"), body, endpoint, retry_after) from None
            raise RequestRefused(e.code, message, err.get("field"), body, endpoint) from None
        except (urllib.error.URLError, OSError, ValueError) as e:  # refused, reset, timed out, not JSON
            raise Unavailable(0, f"cannot reach: {getattr(e, 'reason', e)}", None, None, endpoint) from None


class Session:
    """An episode on the endpoint that opened it (sessions are sticky): .id, .opening (the open
    answer: "messages", "tools", "limits", "reward"), .step(...), .state(), .close()."""

    def __init__(self, client, endpoint, opening):
        self.client, self.endpoint, self.opening = client, endpoint, opening
        self.id = opening["session_id"]
        self.closed = False

    def step(self, tool_calls=None, *, text=None, tool_call=None):
        """Runs one reply's calls: a list of {"id"?, "name", "arguments"} (arguments a dict or its JSON
        text), one such call, or the reply's text (kagent reads its <tool_call> blocks or JSON).
        Returns the step's answer: "observations", "done", "done_reason", "reward", ..."""
        given = [x for x in (tool_calls, text, tool_call) if x is not None]
        if len(given) != 1:
            raise ValueError("give one of tool_calls, text or tool_call")
        body = ({"tool_calls": list(tool_calls)} if tool_calls is not None else
                {"text": text} if text is not None else {"tool_call": tool_call})
        return self._post(f"/v1/sessions/{self.id}/step", body)

    def state(self):
        return self.client._once(self.endpoint, f"/v1/sessions/{self.id}", None)[1]

    def close(self):
        """The episode's summary (reward, final and best verdicts, steps, evaluations, wall time).
        Idempotent."""
        summary = self._post(f"/v1/sessions/{self.id}/close", {})
        self.closed = True
        return summary

    def _post(self, path, body):
        return self.client._once(self.endpoint, path, json.dumps(body).encode())[1]

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        if not self.closed:
            try:
                self.close()
            except KagentError:
                pass


def request(source, problem, kind=None, *, name=None, precision=None, atol=None, rtol=None, tolerance=None,
            trials=None, timing=None, timeout_s=None, measure=None):
    """The JSON body of one evaluation (fields left None are left out: the service's defaults)."""
    body = {"source": source, "kind": kind or kind_of(None, source), "problem": problem}
    for key, value in (("name", name), ("precision", precision), ("atol", atol), ("rtol", rtol),
                       ("tolerance", tolerance), ("trials", trials), ("timing", timing),
                       ("timeout_s", timeout_s), ("measure", measure)):
        if value is not None:
            body[key] = value
    return body


_default = None


def _client():
    global _default
    if _default is None:
        _default = Client()
    return _default


def evaluate(source, problem, kind=None, **options):
    """Client().evaluate with the endpoints of $KAGENT_ENDPOINTS."""
    return _client().evaluate(source, problem, kind, **options)


def evaluate_batch(requests):
    """Client().evaluate_batch with the endpoints of $KAGENT_ENDPOINTS."""
    return _client().evaluate_batch(requests)
