#!/usr/bin/env bash
# kagent serve's HTTP layer (Boost.Beast on Asio) against libmicrohttpd shaped like it
# (mhd_service.c), through the same load and deadline cases: benchmarks/http_load.py, once with
# each. Needs Debian's libmicrohttpd-dev (apt-get install libmicrohttpd-dev; kagent itself does
# not use it) and a built kagent. Usage: benchmarks/http_alternatives/run.sh [build/kagent]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
kagent=${1:-build/kagent}
if ! pkg-config --exists libmicrohttpd; then
  echo "run.sh: libmicrohttpd-dev is not installed (apt-get install libmicrohttpd-dev)" >&2
  exit 3
fi
bin=$(mktemp -d)/mhd_service
trap 'rm -rf "$(dirname "$bin")"' EXIT
cc -std=c11 -D_DEFAULT_SOURCE -O2 -Wall -Wextra -Werror "$here/mhd_service.c" -o "$bin" \
  $(pkg-config --cflags --libs libmicrohttpd)
echo "== kagent serve (Boost $(sed -n 's/^#define BOOST_LIB_VERSION "\(.*\)"/\1/p' /usr/include/boost/version.hpp))"
python3 "$here/../http_load.py" --kagent "$kagent" | sed -n '/^| part/,$p' || true
echo
echo "== libmicrohttpd $(pkg-config --modversion libmicrohttpd) (mhd_service.c)"
python3 "$here/../http_load.py" --kagent "$kagent" --server "$bin" | sed -n '/^| part/,$p' || true
