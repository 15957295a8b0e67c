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

# --test with KAGENT_PYTHON_DEPS=DIR (the Makefile gives BUILD/python-deps): the trainer framework the
# Python client's environment adapter is tested against, pinned, installed by pip into DIR (the
# tests put it on PYTHONPATH), each package only when python3 cannot import it already, so that
# nothing shadows a machine's own numpy or torch. No pip or no network: its test skips, saying so.
if [ "${1:-}" = --test ] && [ -n "${KAGENT_PYTHON_DEPS:-}" ]; then
  want=()
  for spec in gymnasium==1.0.0 numpy==1.26.4 cloudpickle==3.1.0 typing-extensions==4.12.2 farama-notifications==0.0.4; do
    module="${spec%%==*}"; module="${module//-/_}"
    PYTHONPATH="$KAGENT_PYTHON_DEPS" python3 -c "import $module" 2>/dev/null || want+=("$spec")
  done
  if ((${#want[@]})); then
    echo "kagent: installing into $KAGENT_PYTHON_DEPS for the adapter tests: ${want[*]}"
    python3 -m pip install --quiet --disable-pip-version-check --root-user-action=ignore --no-deps --target "$KAGENT_PYTHON_DEPS" "${want[@]}" ||
      echo "kagent: could not install ${want[*]} (pip missing or offline): the Gymnasium adapter's test will skip" >&2
  fi
fi

cuda_home="${CUDA_HOME:-/usr/local/cuda}"
if [ ! -e "$cuda_home/include/nvrtc.h" ]; then
  echo "kagent: the CUDA toolkit was not found in $cuda_home (need NVRTC and its headers); set CUDA_HOME" >&2
  exit 3
fi
