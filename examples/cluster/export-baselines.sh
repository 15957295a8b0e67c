#!/usr/bin/env bash
# Measures the PyTorch baselines (eager and torch.compile) of every problem given, on this node's
# GPUs, into one shared file that every node of the cluster then scores against:
#
#   examples/cluster/export-baselines.sh baselines.json KernelBench/level1 KernelBench/level2
#   kagent serve --problems-root KernelBench --baselines baselines.json      # on every node
#   kagent bench KernelBench/level1 --solutions DIR --baselines baselines.json
#
# PATH...: KernelBench level folders or problem files. KAGENT_GPUS (default 0) lists the GPUs to
# measure on, one problem at a time each (their exports lock the file and merge into it);
# KAGENT_PRECISION (default: each problem's) the precision. Run it on a node of the GPU model and
# torch version the cluster scores with: an entry from another model or version is refused there.
set -euo pipefail
if [ $# -lt 2 ]; then
  echo "usage: $0 OUT.json PATH..." >&2
  exit 2
fi
out=$1
shift
kagent=${KAGENT:-kagent}
IFS=',' read -r -a gpus <<< "${KAGENT_GPUS:-0}"
problems=()
for p in "$@"; do
  if [ -d "$p" ]; then
    while IFS= read -r f; do problems+=("$f"); done < <(find "$p" -maxdepth 1 -name '*.py' | sort -V)
  else
    problems+=("$p")
  fi
done
echo "exporting the baselines of ${#problems[@]} problem(s) on GPU(s) ${gpus[*]} into $out" >&2

# GPU g takes problems g, g + n, g + 2n, ... of the list.
export_on() {
  local slot=$1 gpu=${gpus[$1]} failed=0
  for ((i = slot; i < ${#problems[@]}; i += ${#gpus[@]})); do
    if ! "$kagent" ref "${problems[$i]}" --gpu "$gpu" ${KAGENT_PRECISION:+--precision "$KAGENT_PRECISION"} \
      --export-baselines "$out" > /dev/null; then
      echo "not exported: ${problems[$i]}" >&2
      failed=1
    fi
  done
  return $failed
}
pids=()
for ((s = 0; s < ${#gpus[@]}; ++s)); do
  export_on "$s" &
  pids+=($!)
done
status=0
for pid in "${pids[@]}"; do wait "$pid" || status=1; done
exit $status
