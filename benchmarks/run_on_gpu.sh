#!/usr/bin/env bash
# One call on a GPU machine: build, run every test (GPU tests included), run the benchmarks, and
# print a short table at the end. Logs go to $OUT (the device tool brings them back).
# Usage: benchmarks/run_on_gpu.sh [quick]
set -uo pipefail
OUT=${OUT:-/tmp/kagent-gpu-out}
mkdir -p "$OUT"
B=build-gpu
export KAGENT_CACHE_DIR=/tmp/kagent-cache
summary=()
step() { local name=$1; shift; local t0=$SECONDS; "$@" >"$OUT/$name.log" 2>&1; local rc=$?;
         summary+=("$(printf '%-16s rc=%-3s %4ss' "$name" "$rc" $((SECONDS - t0)))"); return $rc; }

nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader > "$OUT/gpu.txt" 2>&1
step configure cmake -S . -B $B -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo
step build cmake --build $B -j 16
step doctor $B/kagent doctor
step tests bash -c "cd $B && ctest --output-on-failure -j 4 -E '^GpuEval' && ctest --output-on-failure -j 1 -R '^GpuEval'"
step demo $B/kagent eval examples/softmax/cand_online.cu --op examples/softmax/op.json
if [ "${1:-}" != quick ]; then
  step compile_bench $B/benchmarks/compile_latency --reps 5
  step eval_bench $B/benchmarks/eval_latency --reps 5 --repeat 10
  step ncu_bench python3 benchmarks/ncu_agreement.py --kagent $B/kagent --evals 3
fi

echo "== GPU"; cat "$OUT/gpu.txt"
echo "== tests"; grep -E "tests passed|tests failed|\(Failed\)|\(Skipped\)|Timeout" "$OUT/tests.log" | head -30
for f in demo compile_bench eval_bench ncu_bench; do
  [ -f "$OUT/$f.log" ] && { echo "== $f"; tail -n 25 "$OUT/$f.log"; }
done
echo "== steps"; printf '%s\n' "${summary[@]}"
