#!/usr/bin/env bash
# Builds the libFuzzer targets (clang, ASan+UBSan) in build-fuzz and runs each for a bounded time
# on a seed corpus from examples/ and tests/fuzz/seeds/. A crash, sanitizer report, timeout or
# out-of-memory fails the script; its input is kept in build-fuzz/artifacts/ (turn it into a
# regression test, then record it in benchmarks/RESULTS.md).
#   tests/fuzz/run.sh [SECONDS_PER_TARGET] [TARGET...]     (default 20 s, every target)
set -euo pipefail
cd "$(dirname "$0")/../.."
seconds="${1:-20}"
shift || true
targets=("$@")
if ((${#targets[@]} == 0)); then targets=(op_json plan expr manifest results sse tool_args tool_call_text serve_request session_step); fi
build="${KAGENT_FUZZ_BUILD:-build-fuzz}"
cxx="${KAGENT_FUZZ_CXX:-$(command -v clang++ || command -v clang++-14 || true)}"
if [ -z "$cxx" ]; then
  echo "fuzz: clang++ not found (Debian: apt-get install clang libclang-rt-14-dev)" >&2
  exit 3
fi
cuda_bin="${CUDA_HOME:-/usr/local/cuda}/bin"
if [ ! -f "$build/CMakeCache.txt" ]; then
  PATH="$cuda_bin:$PATH" cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_CXX_COMPILER="$cxx" -DKAGENT_FUZZ=ON -DKAGENT_BUILD_TESTS=OFF >/dev/null
fi
cmake --build "$build" -j "$(nproc)" --target "${targets[@]/#/fuzz_}"

# Seed corpora: the repository's own inputs for each format, plus tests/fuzz/seeds/<target>/.
work="$build/fuzz-work"
rm -rf "$work"
mkdir -p "$work" "$build/artifacts"
seed() {  # seed TARGET FILE...
  mkdir -p "$work/corpus-$1"
  local f
  for f in "${@:2}"; do [ -f "$f" ] && cp "$f" "$work/corpus-$1/$(echo "$f" | tr / _)"; done
  return 0
}
seed op_json examples/*/op.json
seed plan examples/*/*.cu examples/kernelbench/*/*.cu examples/kernelbench_library/*/*.cu tests/gpu/kernels/*.cu \
  tests/fuzz/seeds/plan/*
seed manifest examples/ci/*.json
seed results tests/fuzz/seeds/results/*
seed expr tests/fuzz/seeds/expr/*
seed sse tests/fuzz/seeds/sse/*
seed tool_args tests/fuzz/seeds/tool_args/* examples/*/op.json
seed tool_call_text tests/fuzz/seeds/tool_call_text/*
seed serve_request tests/fuzz/seeds/serve_request/*
seed session_step tests/fuzz/seeds/session_step/* tests/fuzz/seeds/tool_call_text/*

status=0
for t in "${targets[@]}"; do
  mkdir -p "$work/corpus-$t"
  log="$work/$t.log"
  echo "== fuzz_$t: ${seconds} s"
  mkdir -p "$work/tmp"  # the targets that read files write their input there
  if TMPDIR="$work/tmp" ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    "$build/tests/fuzz/fuzz_$t" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len=65536 \
    -artifact_prefix="$build/artifacts/$t-" -print_final_stats=1 "$work/corpus-$t" >"$log" 2>&1; then
    echo "   ok: $(grep -E '^stat::number_of_executed_units' "$log" | awk '{print $2}') executions," \
      "corpus $(ls "$work/corpus-$t" | wc -l) inputs"
  else
    status=1
    echo "   FINDING: see $log and $build/artifacts/$t-*"
    grep -E 'ERROR|runtime error|==[0-9]+==' "$log" | head -5 || true
  fi
done
exit $status
