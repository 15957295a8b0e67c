"""llama-cpp-python's OpenAI-compatible server on a free 127.0.0.1 port, started and stopped here."""
import json
import socket
import subprocess
import time
import urllib.error
import urllib.request


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class LlamaServer:
    """`python -m llama_cpp.server` as issue #17 gives it, on 127.0.0.1 only, requiring `api_key`
    (so a run that did not send the key fails with 401 instead of passing unnoticed), and with
    `--logits_all false`: the server's default keeps the logits of every prompt position, which for
    Gemma 3's 262k-token vocabulary is 1 MiB per token (8.5 GB resident, and minutes of copying, on
    kagent's 10k-token opening); kagent asks for no logprobs."""

    def __init__(self, python, gguf, n_ctx, api_key, log_path, threads=None):
        self.port = free_port()
        self.base_url = f"http://127.0.0.1:{self.port}/v1"
        self.api_key = api_key
        cmd = [python, "-m", "llama_cpp.server", "--model", gguf, "--chat_format", "chatml-function-calling",
               "--n_ctx", str(n_ctx), "--logits_all", "false", "--host", "127.0.0.1", "--port", str(self.port), "--api_key", api_key]
        if threads:
            cmd += ["--n_threads", str(threads)]
        self.log_path = log_path
        self._log = open(log_path, "w")
        self.proc = subprocess.Popen(cmd, stdout=self._log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)

    def wait_ready(self, timeout_s):
        """Polls GET /v1/models until the model is loaded; returns the seconds it took."""
        start = time.monotonic()
        request = urllib.request.Request(self.base_url + "/models",
                                         headers={"Authorization": f"Bearer {self.api_key}"})
        while time.monotonic() - start < timeout_s:
            if self.proc.poll() is not None:
                raise RuntimeError(f"the server exited ({self.proc.returncode}); see {self.log_path}")
            try:
                with urllib.request.urlopen(request, timeout=5) as r:
                    if r.status == 200 and json.load(r).get("data"):
                        return time.monotonic() - start
            except (urllib.error.URLError, ConnectionError, TimeoutError, ValueError):
                pass
            time.sleep(0.5)
        raise RuntimeError(f"the server did not answer within {timeout_s} s; see {self.log_path}")

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._log.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()
