#!/usr/bin/env bash
# N `kagent eval` processes of one candidate against one PyTorch problem, all at once on one GPU
# (default: a correct ReLU against KernelBench's level1/19_ReLU, 6.4 GB of input). A verdict must not
# depend on what else runs there: every process either judges the candidate as it is (exit 0 here)
# or says the GPU was busy (exit 3, "not judged"); none may fail the correct candidate (exit 1).
# Usage: benchmarks/concurrent_evals.sh KAGENT N [CANDIDATE PROBLEM]
set -uo pipefail
kagent=$1
n=${2:-10}
kb=${KAGENT_KERNELBENCH_DIR:-../shared/kernelbench}
cand=${3:-examples/kernelbench/level1/19_ReLU.cu}
problem=${4:-$kb/level1/19_ReLU.py}
dir=$(mktemp -d)
t0=$SECONDS
for i in $(seq 1 "$n"); do
  "$kagent" eval "$cand" --op "$problem" --json > "$dir/$i.json" 2> "$dir/$i.err" &
  echo $! > "$dir/$i.pid"
done
for i in $(seq 1 "$n"); do wait "$(cat "$dir/$i.pid")"; echo $? > "$dir/$i.rc"; done
echo "$n evaluations of $(basename "$cand") against $(basename "$problem") at once: $((SECONDS - t0)) s"
printf '%-4s %-4s %-10s %-12s %s\n' proc exit verdict stage message
fails=0
for i in $(seq 1 "$n"); do
  rc=$(cat "$dir/$i.rc")
  read -r verdict stage <<< "$(python3 -c '
import json, sys
try:
    r = json.load(open(sys.argv[1]))
    o = r.get("outcome", {})
    print("correct" if o.get("correct") else "incorrect", o.get("failure_stage", "-") or "-")
except Exception:
    print("- -")' "$dir/$i.json")"
  msg=$(grep -v '^\[' "$dir/$i.err" | tail -n 1 | cut -c1-150)
  printf '%-4s %-4s %-10s %-12s %s\n' "$i" "$rc" "$verdict" "$stage" "$msg"
  [ "$rc" = 1 ] && fails=$((fails + 1))
done
echo "judged correct: $(grep -l '"correct": *true' "$dir"/*.json 2>/dev/null | wc -l), not judged (exit 3): $(grep -lx 3 "$dir"/*.rc | wc -l), failed the correct candidate (exit 1): $fails"
rm -rf "$dir"
[ "$fails" = 0 ]
