#!/usr/bin/env bash
# One call on a GPU machine: build, run every test (GPU tests included), run the benchmarks, and
# print a short table at the end. Logs go to $OUT (the device tool brings back at most 8 files).
# Usage: benchmarks/run_on_gpu.sh [tests|bench|ncu|all]   (default all)
set -uo pipefail
OUT=${OUT:-/tmp/kagent-gpu-out}
mkdir -p "$OUT"
B=build-gpu
what=${1:-all}
export KAGENT_CACHE_DIR=/tmp/kagent-cache
summary=()
# step NAME LIMIT_S CMD...: runs CMD with a time limit, appending to $OUT/NAME.log.
step() { local name=$1 limit=$2; shift 2; local t0=$SECONDS; timeout "$limit" "$@" >>"$OUT/$name.log" 2>&1; local rc=$?;
         summary+=("$(printf '%-22s rc=%-3s %4ss' "$name: ${1##*/}" "$rc" $((SECONDS - t0)))"); return $rc; }

nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader > "$OUT/env.log" 2>&1
step build 300 cmake -S . -B $B -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo
step build 300 cmake --build $B -j 16
step env 60 $B/kagent doctor
if [ "$what" = all ] || [ "$what" = tests ]; then
  step tests 300 bash -c "cd $B && ctest --output-on-failure -j 4 -E '^GpuEval' && ctest --output-on-failure -j 1 -R '^GpuEval'"
  step env 60 $B/kagent eval examples/softmax/cand_online.cu --op examples/softmax/op.json
fi
if [ "$what" = all ] || [ "$what" = bench ]; then
  step bench 200 $B/benchmarks/compile_latency --reps 5
  step bench 200 $B/benchmarks/eval_latency --reps 5 --repeat 10
fi
if [ "$what" = all ] || [ "$what" = ncu ]; then
  step ncu 400 python3 benchmarks/ncu_agreement.py --kagent $B/kagent --evals 3
fi

echo "== env"; cat "$OUT/env.log" | tail -n 25
[ -f "$OUT/tests.log" ] && { echo "== tests"; grep -E "tests passed|tests failed|\(Failed\)|\(Skipped\)|Timeout" "$OUT/tests.log" | head -30; }
[ -f "$OUT/bench.log" ] && { echo "== bench"; grep -v "^warning" "$OUT/bench.log" | tail -n 24; }
[ -f "$OUT/ncu.log" ] && { echo "== ncu"; tail -n 12 "$OUT/ncu.log"; }
echo "== steps"; printf '%s\n' "${summary[@]}"
