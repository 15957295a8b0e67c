#!/usr/bin/env bash
# Installs the Debian packages kagent needs, only those whose files are missing (a machine may have
# cmake or gtest from elsewhere). Plain: what building and running kagent needs (`make demo`).
# --test: also what the test suite needs (`make test`, CI): GoogleTest, cpp-httplib for the mock LLM
# servers, xmllint for the JUnit files, headless Chromium for the HTML report, readelf, and clang
# with libFuzzer and the sanitizer runtimes for tests/fuzz/run.sh (Debian 12 ships clang 14).
# The CUDA toolkit (NVRTC, headers) is expected in /usr/local/cuda or $CUDA_HOME.
set -euo pipefail

# package : a file or command that shows it is present
checks=(
  "cmake:cmd:cmake"
  "make:cmd:make"
  "g++:cmd:g++"
  "nlohmann-json3-dev:file:/usr/include/nlohmann/json.hpp"
  "libcli11-dev:file:/usr/include/CLI/CLI.hpp"
  "libspdlog-dev:file:/usr/include/spdlog/spdlog.h"
  "libfmt-dev:file:/usr/include/fmt/core.h"
  "libcurl4-openssl-dev:cmd:curl-config"
  "libboost-dev:file:/usr/include/boost/beast/http.hpp"
  "pkg-config:cmd:pkg-config"
)
test_checks=(
  "libgtest-dev:file:/usr/include/gtest/gtest.h"
  "libcpp-httplib-dev:file:/usr/include/httplib.h"
  "binutils:cmd:readelf"
  "python3:cmd:python3"
  # The report tests: xmllint checks the JUnit XML, headless chromium renders the HTML report.
  "libxml2-utils:cmd:xmllint"
  "chromium:cmd:chromium"
  "clang:cmd:clang++"
  "libclang-rt-14-dev:glob:/usr/lib/llvm-14/lib/clang/*/lib/linux/libclang_rt.fuzzer-x86_64.a"
)
case "${1:-}" in
  "") ;;
  --test | --test-tools) checks+=("${test_checks[@]}") ;;
  *) echo "usage: $0 [--test]" >&2; exit 2 ;;
esac

missing=()
for c in "${checks[@]}"; do
  IFS=: read -r pkg kind what <<<"$c"
  if [ "$kind" = cmd ]; then command -v "$what" >/dev/null 2>&1 || missing+=("$pkg")
  elif [ "$kind" = glob ]; then compgen -G "$what" >/dev/null || missing+=("$pkg")
  else [ -e "$what" ] || missing+=("$pkg"); fi
done

if ((${#missing[@]})); then
  echo "kagent: installing missing packages: ${missing[*]}"
  sudo=""
  if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
  $sudo apt-get update -qq || true
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# --test with KAGENT_PYTHON_DEPS=DIR (the Makefile gives BUILD/python-deps): the trainer frameworks the
# Python client's adapters are tested against, pinned, installed by pip into DIR (the tests put it on
# PYTHONPATH), each package only when python3 cannot import it already, so that nothing shadows a
# machine's own numpy or torch: gymnasium; skyrl-gym with what importing it needs (pandas, requests);
# verl (its agent loop and tool modules; the test stands in for torch, ray and the model server) with
# pydantic and regex; and OpenRLHF's agent module, taken from its wheel (the package needs CUDA builds).
# No pip or no network: the adapters' tests skip, saying so.
if [ "${1:-}" = --test ] && [ -n "${KAGENT_PYTHON_DEPS:-}" ]; then
  want=()
  for spec in gymnasium==1.0.0 numpy==1.26.4 cloudpickle==3.1.0 typing-extensions==4.12.2 farama-notifications==0.0.4 \
      skyrl-gym==0.4.0 pandas==2.2.3 python-dateutil==2.9.0.post0 six==1.16.0 pytz==2024.2 tzdata==2024.2 \
      requests==2.32.3 urllib3==2.2.3 idna==3.10 charset-normalizer==3.4.0 certifi==2024.8.30 \
      verl==0.9.1 pydantic==2.9.2 pydantic-core==2.23.4 annotated-types==0.7.0 regex==2024.9.11; do
    module="${spec%%==*}"; module="${module//-/_}"
    check="import $module"
    case $module in
      python_dateutil) check="import dateutil" ;;
      pydantic) check="import pydantic; assert pydantic.VERSION.startswith('2.')" ;;  # verl's schemas are pydantic 2's
    esac
    PYTHONPATH="$KAGENT_PYTHON_DEPS" python3 -c "$check" 2>/dev/null || want+=("$spec")
  done
  if ((${#want[@]})); then
    echo "kagent: installing into $KAGENT_PYTHON_DEPS for the adapter tests: ${want[*]}"
    # One at a time and wheels only: a package without a wheel for this Python skips its tests alone.
    for spec in "${want[@]}"; do
      python3 -m pip install --quiet --disable-pip-version-check --root-user-action=ignore --no-deps --only-binary=:all: \
        --target "$KAGENT_PYTHON_DEPS" "$spec" 2>/dev/null ||
        echo "kagent: could not install $spec (pip missing, offline or no wheel for this Python): the adapter tests that need it will skip" >&2
    done
    rm -rf "$KAGENT_PYTHON_DEPS/tests" "$KAGENT_PYTHON_DEPS/scripts"  # verl's wheel ships these as top-level packages
  fi
  agent="$KAGENT_PYTHON_DEPS/openrlhf-0.11.2/agent.py"
  if [ ! -f "$agent" ]; then
    wheels=$(mktemp -d)
    if python3 -m pip download --quiet --disable-pip-version-check --no-deps --only-binary=:all: --python-version 3.11 \
         --dest "$wheels" openrlhf==0.11.2 &&
       mkdir -p "${agent%/*}" &&
       python3 -c 'import sys, zipfile; z = zipfile.ZipFile(sys.argv[1]); n = [x for x in z.namelist() if x.endswith("openrlhf/utils/agent.py")][0]; open(sys.argv[2], "wb").write(z.read(n))' \
         "$wheels"/openrlhf-0.11.2-*.whl "$agent"; then :
    else
      echo "kagent: could not fetch OpenRLHF 0.11.2's agent module (pip missing or offline): its adapter's test will skip" >&2
    fi
    rm -rf "$wheels"
  fi
fi

cuda_home="${CUDA_HOME:-/usr/local/cuda}"
if [ ! -e "$cuda_home/include/nvrtc.h" ]; then
  echo "kagent: the CUDA toolkit was not found in $cuda_home (need NVRTC and its headers); set CUDA_HOME" >&2
  exit 3
fi
