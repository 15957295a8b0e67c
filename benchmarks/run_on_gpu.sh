#!/usr/bin/env bash
# One run on a GPU machine: build, run every test (GPU tests included), run the benchmarks, and
# print a short table at the end. Logs go to $OUT (default /tmp/kagent-gpu-out).
# Usage: benchmarks/run_on_gpu.sh [MODE...], MODE one of tests cpu-tests bench kernelbench fixtures
#   ncu roofline level1 check problems precision margins precision-tests precision-suite tf32-accumulation
#   shared-baselines multigpu library before-after warm-tests
#   modelnew modelnew-bench containment concurrent draws serve house floors preset throughput timeline ahead rate
#   mixed spares credit task-floors recheck gpu-tests episodes all
#   (default all; several modes run in this script's order; multigpu needs a machine with
#   two GPUs; before-after needs the older tree in build-before/src, see below)
# KernelBench problems come from $KAGENT_KERNELBENCH_DIR (default ../shared/kernelbench); the
# `kernelbench` comparison also needs $KB_TIMING, KernelBench's src/kernelbench/timing.py.
set -uo pipefail
OUT=${OUT:-/tmp/kagent-gpu-out}
mkdir -p "$OUT"
B=build-gpu
modes=" ${*:-all} "
# want MODE...: whether any of these modes was asked for.
want() { local m; for m; do [[ $modes == *" $m "* ]] && return 0; done; return 1; }
export KAGENT_CACHE_DIR=/tmp/kagent-cache
KB=$(realpath -m "${KAGENT_KERNELBENCH_DIR:-../shared/kernelbench}")  # absolute: tests run from the build folder
export KAGENT_KERNELBENCH_DIR=$KB
summary=()
# step NAME LIMIT_S CMD...: runs CMD with a time limit, appending to $OUT/NAME.log.
step() { local name=$1 limit=$2; shift 2; local t0=$SECONDS; timeout "$limit" "$@" >>"$OUT/$name.log" 2>&1; local rc=$?;
         summary+=("$(printf '%-22s rc=%-3s %4ss' "$name: ${1##*/}" "$rc" $((SECONDS - t0)))"); return $rc; }

nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader > "$OUT/env.log" 2>&1
# Boost's headers (kagent serve's HTTP layer) and cpp-httplib (the tests' HTTP clients and mock
# servers), where the machine has none: the Debian packages carried in .debs/ (libboost1.74-dev,
# libcpp-httplib-dev, libcpp-httplib0.11, and for its header the -dev packages of OpenSSL, zlib and
# brotli, with brotli's library), each the machine lacks unpacked into /tmp/debroot, whose
# pkg-config files say prefix=/usr: moved to /tmp/debroot/usr. The -dev packages' library links
# (libz.so -> /lib/.../libz.so.1.2.13, libssl.so -> libssl.so.3) point at the machine's own library
# where the package's is not there. Fetched with `apt-get download libboost1.74-dev
# libcpp-httplib-dev libcpp-httplib0.11 libssl-dev zlib1g-dev libbrotli-dev libbrotli1` in .debs/
# (not committed).
if compgen -G "$PWD/.debs/*.deb" > /dev/null &&
   { ! pkg-config --exists cpp-httplib 2>/dev/null || [ ! -f /usr/include/boost/beast/http.hpp ]; }; then
  DR=/tmp/debroot
  DL=$DR/usr/lib/x86_64-linux-gnu
  rm -rf $DR && mkdir -p $DR
  for deb in "$PWD"/.debs/*.deb; do
    case $(dpkg-deb -f "$deb" Package) in
      libssl-dev) pkg-config --exists openssl && continue ;;
      zlib1g-dev) pkg-config --exists zlib && continue ;;
      libbrotli-dev) pkg-config --exists libbrotlidec && continue ;;
      libbrotli1) ldconfig -p 2>/dev/null | grep -q 'libbrotlidec\.so\.1 ' && continue ;;
      libboost*-dev) [ -f /usr/include/boost/beast/http.hpp ] && continue ;;
      libcpp-httplib*) pkg-config --exists cpp-httplib 2>/dev/null && continue ;;
    esac
    dpkg -x "$deb" $DR
  done
  [ -d $DL/pkgconfig ] && sed -i "s|^prefix=/usr\$|prefix=$DR/usr|" $DL/pkgconfig/*.pc
  for lib in $DL/*.so; do
    if [ -L "$lib" ] && [ ! -e "$lib" ]; then
      own=$(ls /usr/lib/x86_64-linux-gnu/"${lib##*/}".* /lib/x86_64-linux-gnu/"${lib##*/}".* 2>/dev/null | head -n1)
      [ -n "$own" ] && ln -sf "$own" "$lib"
    fi
  done
  export PKG_CONFIG_PATH=$DL/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}
  export CMAKE_PREFIX_PATH=$DR/usr${CMAKE_PREFIX_PATH:+:$CMAKE_PREFIX_PATH}
  export CPATH=$DR/usr/include${CPATH:+:$CPATH}
  export LIBRARY_PATH=$DL${LIBRARY_PATH:+:$LIBRARY_PATH}
  export LD_LIBRARY_PATH=$DL${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  echo "cpp-httplib from .debs: $(pkg-config --modversion cpp-httplib 2>&1) ($(pkg-config --cflags --libs cpp-httplib 2>&1))" \
    >> "$OUT/env.log"
fi
# BUILD_TARGETS=none: no build (the modes that need only torch and tools/, such as margins).
if [ "${BUILD_TARGETS:-}" != none ]; then
  step build 300 cmake -S . -B $B -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo
  step build 300 cmake --build $B -j 16 ${BUILD_TARGETS:+--target $BUILD_TARGETS}
  step env 60 $B/kagent doctor
fi
if want all tests; then
  # GPU-heavy suites one at a time: they time kernels and hold up to ~60 GB of GPU memory.
  gpu_suites='^(GpuEval|PyTorchEval|RefServerTest|CheckGpu|CheckCli|CuptiGpu|EveryGpu|Bounds|Cluster|LibrarySteps|DrawnInputs)'
  step tests ${TESTS_LIMIT:-500} bash -c "cd $B && ctest --output-on-failure -j 12 -E '$gpu_suites'; ctest --output-on-failure -j 1 -R '$gpu_suites'"
  step env 60 $B/kagent eval examples/softmax/cand_online.cu --op examples/softmax/op.json
fi
if want cpu-tests; then
  # The suites that need no GPU code of their own (bench, report, CLI), run where a GPU is present.
  step tests 300 bash -c "cd $B && ctest --output-on-failure -j 8 -L 'kagent_unit_tests|kagent_cli_tests'"
fi
if want level1 cpu-tests; then
  # `kagent bench` over the whole of KernelBench level 1 with the fixtures as solutions: a first
  # run from an empty cache (kernels compiled, eager and torch.compile baselines measured), then a
  # second with the cache warm. Both resume across runs of this script on the same machine (the
  # files live in the build folder, which stays), so each run takes at most LEVEL1_LIMIT s.
  L1=$B/level1-bench
  mkdir -p $L1
  [ -f $L1/first.jsonl ] || rm -rf $L1/cache
  export KAGENT_CACHE_DIR=$L1/cache
  # The second run starts only once the first has every problem (bench exits 0).
  for run in first second; do
    step level1-$run ${LEVEL1_LIMIT:-500} $B/kagent bench $KB/level1 --solutions examples/kernelbench \
      --out $L1/$run.jsonl --resume
    rc=$?
    cp $L1/$run.jsonl $OUT/level1-$run.jsonl
    [ $rc = 0 ] || break
  done
  [ -f $L1/second.jsonl ] && $B/kagent report --md $L1/second.jsonl > $OUT/level1-report.md 2>&1
fi
if want all bench; then
  step bench 200 $B/benchmarks/compile_latency --reps 5
  step bench 200 $B/benchmarks/eval_latency --reps 5 --repeat 10
fi
if want all kernelbench; then
  step kernelbench 400 python3 benchmarks/kernelbench_compare.py baselines --kagent $B/kagent --kb-timing "$KB_TIMING" \
    $KB/level1/19_ReLU.py $KB/level1/23_Softmax.py $KB/level1/1_Square_matrix_multiplication_.py \
    $KB/level1/47_Sum_reduction_over_a_dimension.py $KB/level1/40_LayerNorm.py
  step kernelbench 300 python3 benchmarks/kernelbench_compare.py load-inline --kb-timing "$KB_TIMING" $KB/level1/19_ReLU.py
  step kernelbench 300 $B/benchmarks/eval_latency --reps 3 --repeat 10 \
    --pytorch examples/kernelbench/level1/19_ReLU.cu $KB/level1/19_ReLU.py \
    --pytorch examples/kernelbench/level1/23_Softmax.cu $KB/level1/23_Softmax.py
  step kernelbench 120 $B/tests/kagent_gpu_tests --gtest_filter='PyTorchEval.SixGigabyte*'
fi
if want precision; then
  # The references' own error against fp64, fp32 (TF32 off) and tf32 (TF32 on), over every KernelBench
  # problem (issue #15): resumable, new problems started for 520 s per call; call again until the
  # summary covers all (a problem killed at the step's limit is recorded as such, not retried).
  PR=$B/reference_precision.jsonl
  step precision 590 python3 benchmarks/reference_precision.py --kernelbench "$KB" --out $PR --resume --budget-s 520
  cp $PR $OUT/reference_precision.jsonl
fi
if want margins; then
  # The precision rule's margins (output_rules.hpp) over every KernelBench problem: the fp32
  # reference, an honest fp32 forward on the CPU and the reference at TF32, BF16 and FP16, each
  # against fp64. Resumable like precision: MARGINS_FILTER narrows the problems.
  mkdir -p $B
  PM=$B/precision_margins.jsonl
  step margins 590 python3 benchmarks/precision_margins.py --kernelbench "$KB" --out $PM --resume \
    --budget-s "${MARGINS_BUDGET_S:-500}" \
    --filter "${MARGINS_FILTER:-}"
  cp $PM $OUT/precision_margins.jsonl
fi
if want precision-tests; then
  # The GPU tests of the precision work: exact fp32 convolution, the fp64 rule, weak references,
  # the whole-output rules (constants, TF32 at a loose tolerance) on plans and ModelNew solutions,
  # and every example solution still correct under them.
  step precision 570 $B/tests/kagent_gpu_tests \
    --gtest_filter='PyTorchEval.ExactFp32*:PyTorchEval.CandidateRightAgainstFp64*:PyTorchEval.MostlyZero*:RefServerTest.PrecisionSets*:PyTorchEval.WholeOutput*:PyTorchEval.EveryFixtureIsCorrect:ModelNewEval.Tf32*:ModelNewEval.LowerPrecision*:PyTorchEval.SharedBaselines*'
fi
if want precision-suite; then
  # TF32, BF16 and FP16 versions of fp32 KernelBench problems, and honest fp32 ones with other
  # summation orders, through kagent eval (benchmarks/precision_suite.py). Resumable; SUITE_ONLY
  # (a path fragment, e.g. level1/97) narrows the problems.
  mkdir -p $B
  PS=$B/precision_suite.jsonl
  step precision-suite 590 python3 benchmarks/precision_suite.py --kagent $B/kagent --kernelbench "$KB" --out $PS \
    --resume --budget-s "${SUITE_BUDGET_S:-420}" --only "${SUITE_ONLY:-}"
  cp $PS $OUT/precision_suite.jsonl
fi
if want tf32-accumulation; then
  # TF32's error on GEMMs: input rounding or the tensor cores' accumulation (3xTF32 against TF32).
  step tf32-accumulation 120 python3 benchmarks/tf32_accumulation.py
fi
if want shared-baselines; then
  # One baselines file (kagent ref --export-baselines): kagent eval and kagent serve on every GPU
  # score against it alike; another GPU model's or torch version's entries, and a problem without
  # one, are refused. GPUs 0 and 1 where there are two.
  gpus=0
  [ "$(nvidia-smi -L 2>/dev/null | wc -l)" -ge 2 ] && gpus=0,1
  step shared-baselines 590 python3 benchmarks/shared_baselines.py --kagent $B/kagent --kernelbench "$KB" \
    --gpus $gpus --out "$OUT/shared_baselines.json"
fi
if want task-floors; then
  # The memory floor each task states against the problem's own baselines (a floor no baseline
  # beats, or the text says it is no bound): a scripted optimize run per problem that stops at once.
  step task-floors ${FLOORS_LIMIT:-300} python3 benchmarks/task_floors.py --kagent $B/kagent --kernelbench "$KB" \
    --out $OUT/task_floors.json ${FLOORS_PROBLEMS:-level1/12 level1/19 level1/23 level1/88}
fi
if want all fixtures; then
  step fixtures 580 python3 benchmarks/fixture_tiers.py --kagent $B/kagent --kernelbench "$KB"
fi
if want all check; then
  step check 400 python3 benchmarks/check_gate.py --kagent $B/kagent --runs 10
fi
if want all problems; then
  # Every KernelBench problem of levels 1-3: signature and one reference run (no baselines); the
  # problems whose forward draws random numbers, and what they draw.
  # The reference outputs' figures (--stats) are what benchmarks/trivial_outputs judges a constant and
  # an all-zero output against.
  step problems ${PROBLEMS_LIMIT:-580} python3 benchmarks/load_all_problems.py --kernelbench "$KB" \
    --stats "$OUT/output_stats.jsonl" --fp64
  [ -x $B/benchmarks/trivial_outputs ] && step problems 60 $B/benchmarks/trivial_outputs "$OUT/output_stats.jsonl"
fi
if want draws; then
  # The random numbers references draw in forward, as inputs: the reference server and `kagent ref`
  # on level2/66, level2/83 and level3/35, our native solutions of the three, ModelNew solutions
  # of level2/66 with torch's dropout (correct) and with draws of their own (not).
  step draws 420 $B/tests/kagent_gpu_tests --gtest_filter='DrawnInputs.*'
fi
if want multigpu; then
  # The level-1 fixture bench on GPU 0 alone, then on GPUs 0,1: same tiers, wall times, speedup.
  step multigpu 580 python3 benchmarks/multi_gpu_bench.py --kagent $B/kagent --kernelbench "$KB" --gpus 0,1
  step multigpu 300 $B/tests/kagent_gpu_tests --gtest_filter='EveryGpu.*'
fi
if want library; then
  # Library steps (issue #19): the GPU tests (LibrarySteps, LibraryStepsVsPyTorch: shapes and
  # verdicts in library.log; LibraryStepsGraphReplay: the launch-overhead medians), then each
  # solution of examples/kernelbench_library against its KernelBench problem under fp32 (tier and
  # time in library.log; for level1/*, the overhead fixtures, the speedup is the overhead ratio).
  step library 600 $B/tests/kagent_gpu_tests --gtest_filter='LibrarySteps*'
  for f in examples/kernelbench_library/level*/*.cu; do
    rel=${f#examples/kernelbench_library/}
    echo "== $rel" >> "$OUT/library.log"
    step library 300 $B/kagent eval "$f" --op "$KB/${rel%.cu}.py" --precision fp32
  done
  # The per-launch table of a plan with library steps: each step named, with the kernels it ran.
  echo "== profile level3/1_MLP" >> "$OUT/library.log"
  step library 300 $B/kagent profile examples/kernelbench_library/level3/1_MLP.cu --op "$KB/level3/1_MLP.py"
  # `kagent bench` over level 2 with these solutions (the rest of the level unsolved): the summary.
  step library-bench 400 $B/kagent bench "$KB/level2" --solutions examples/kernelbench_library --precision fp32 \
    --out "$OUT/library-level2.jsonl"
  $B/kagent report --md "$OUT/library-level2.jsonl" > "$OUT/library-report.md" 2>&1
fi
if want before-after; then
  # Issue #18's re-measure: the tree before the evaluator was split (a `git archive` of commit
  # ae5c02c unpacked in build-before/src, carried to the device) built beside this one; warm and cold
  # evaluation latency and repeatability in alternation, then Nsight Compute agreement of both.
  BT=${KAGENT_BEFORE_TREE:-build-before/src}
  step before-build 300 cmake -S "$BT" -B build-before/build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DKAGENT_BUILD_TESTS=OFF
  step before-build 300 cmake --build build-before/build -j 16
  for round in 1 2; do
    echo "== before (round $round)" >> "$OUT/before-after.log"
    step before-after 200 build-before/build/benchmarks/eval_latency --reps 3 --repeat 5
    echo "== after (round $round)" >> "$OUT/before-after.log"
    step before-after 200 $B/benchmarks/eval_latency --reps 3 --repeat 5
  done
  echo "== before" >> "$OUT/before-after-ncu.log"
  step before-after-ncu 400 python3 benchmarks/ncu_agreement.py --kagent build-before/build/kagent --evals 3
  echo "== after" >> "$OUT/before-after-ncu.log"
  step before-after-ncu 400 python3 benchmarks/ncu_agreement.py --kagent $B/kagent --evals 3
fi
if want modelnew; then
  # ModelNew solutions (issue 20): the fixtures in tests/gpu/modelnew, then KernelBench's own
  # adversarial kernels (its repository's src/ in build-kb/kernelbench-src, never committed) on
  # the problem they were written for. Several at once: their extensions build in parallel on the
  # CPU, and the GPU lock serializes what they measure.
  KBT=build-kb/kernelbench-src/src/kernelbench/unit_tests/test_kernels
  for k in result_reuse_kernel zero_out_kernel non_default_stream_kernel; do
    [ -f $KBT/$k.py ] && timeout 400 $B/kagent eval $KBT/$k.py --op $KB/level1/1_Square_matrix_multiplication_.py \
      --max-wall-s 3 > "$OUT/modelnew-kb-$k.log" 2>&1 &
  done
  step modelnew ${MODELNEW_LIMIT:-420} bash -c "cd $B && ctest --output-on-failure -j 6 -R '^ModelNewEval'"
  wait
fi
if want modelnew-bench; then
  # kagent's timing of KernelBench's example solutions against KernelBench's own, side by side,
  # and `kagent check` on a Triton kernel at a 3% margin (identical passes, 10% slower fails).
  step modelnew-bench 400 python3 benchmarks/modelnew_vs_kernelbench.py --kagent $B/kagent \
    --kernelbench-src build-kb/kernelbench-src
  step modelnew-check 400 bash benchmarks/modelnew_check_margin.sh $B/kagent
fi
if want containment; then
  # Untrusted problem files and solutions reach no secret (the probes in test_containment.cpp), each
  # child's view from outside (test_child_view.cpp), an output stored in its input, then ten
  # evaluations of a 6.4 GB problem at once on this GPU: none may fail the correct candidate.
  step containment 100 $B/tests/kagent_unit_tests --gtest_filter='ChildView.*:MemoryUsers.*:TensorAlias.*'
  step containment 240 $B/tests/kagent_gpu_tests --gtest_filter='Containment.*:RefServerTest.*'
  step containment ${MODELNEW_LIMIT:-420} $B/tests/kagent_gpu_tests --gtest_filter='ModelNewEval.*'
fi
if want concurrent; then
  step concurrent 500 bash benchmarks/concurrent_evals.sh $B/kagent ${CONCURRENT_EVALS:-10}
fi
if want preset; then
  # The training preset against the default protocol on 70 candidates of a 65 us operator (honest
  # ones of differing speed, every failing kind) and 16 ReLU plans of the 6.4 GB level1/19_ReLU (an
  # operator of milliseconds): tiers and medians side by side.
  step preset ${PRESET_LIMIT:-400} python3 benchmarks/preset_agreement.py --kagent $B/kagent --out $OUT/preset.json \
    --kernelbench "$KB" --relu-n ${PRESET_RELU_N:-16} ${PRESET_ARGS:-}
fi
if want throughput; then
  # Evaluations per second: one process per candidate against one session, default and training
  # presets, built in turn or ahead; ModelNew builds cold and cached.
  step throughput ${THROUGHPUT_LIMIT:-560} python3 benchmarks/session_throughput.py --kagent $B/kagent \
    --kernelbench "$KB" --only ${THROUGHPUT_ONLY:-native,pytorch,modelnew} --out $OUT/throughput.json ${THROUGHPUT_ARGS:-}
fi
if want ahead; then
  # ModelNew workers started ahead of their turn: every hack of tests/gpu/modelnew evaluated in one
  # session whose workers start while the solution before is measured (their builds made first on
  # the CPU, all at once).
  step ahead ${AHEAD_LIMIT:-400} $B/tests/kagent_gpu_tests --gtest_filter='ModelNewEval.EveryHack*'
fi
if want timeline; then
  # Where an evaluation's time goes (benchmarks/eval_timeline.py): native ReLU plans on the 6.4 GB
  # level1/19_ReLU, then six distinct load_inline ModelNew ReLUs (built ahead at once, their workers
  # started ahead) on a 1x128 ReLU and again on 19_ReLU, all in one session each under --preset
  # training.
  TL=$OUT/timeline-work
  mkdir -p $TL
  python3 - "$TL" > $TL/files.txt <<'PY'
import sys; sys.path.insert(0, "benchmarks"); import generated_candidates as g
d = sys.argv[1]
print(" ".join(g.relu_set(d + "/plans", 8, tag="t")))
print(g.small_relu_problem(d))
print(" ".join(g.modelnew_relu_set(d + "/modelnew", 6, tag="t")))
PY
  plans=$(sed -n 1p $TL/files.txt); small=$(sed -n 2p $TL/files.txt); mn=$(sed -n 3p $TL/files.txt)
  step timeline 150 python3 benchmarks/eval_timeline.py --top 22 --kagent $B/kagent --skip-first 2 --log $OUT/timeline-relu.log \
    -- $plans --op $KB/level1/19_ReLU.py --preset training
  step timeline 250 python3 benchmarks/eval_timeline.py --top 22 --kagent $B/kagent --skip-first 2 --log $OUT/timeline-mn-small.log \
    --mark 'kagent-modelnew.*\(time\) answered' -- $mn --op $small --preset training
  step timeline 120 python3 benchmarks/eval_timeline.py --top 22 --kagent $B/kagent --skip-first 1 --log $OUT/timeline-mn-relu.log \
    --mark 'kagent-modelnew.*\(time\) answered' -- $mn --op $KB/level1/19_ReLU.py --preset training
fi
if want warm-tests; then
  # The GPU tests of this round: problems kept warm across switches, started ahead, and let go when
  # a problem does not fit beside them; inputs sealed instead of restored for the timed samples, and
  # re-checks queued behind their samples (the plan suites, an fp64 twin's included); the judge's
  # backend; then the service's own tests (the queue's affinity), whatever the first suite gave.
  step warmtests ${WARM_TESTS_LIMIT:-400} bash -c "cd $B && ./tests/kagent_gpu_tests \
    --gtest_filter='GpuEval.*:PyTorchEval.ProblemsStay*:PyTorchEval.AProblemThat*:PyTorchEval.FixtureGets*:PyTorchEval.WrongSolution*:PyTorchEval.InPlace*:PyTorchEval.CandidateRightAgainstFp64*:PyTorchEval.ExactFp32*:JudgeBackendGpu.*'; \
    ./tests/kagent_serve_tests"
fi
if want spares; then
  # Spare reference servers (started before their problem is known): the GPU tests of the pool, then
  # the switching costs on GPU 0 (benchmarks/mixed_batch.py switch) without spares and with one, side
  # by side on one warmed cache: a new problem announced one evaluation ahead, and one not announced.
  step spares ${SPARES_TESTS_LIMIT:-240} bash -c "cd $B && ./tests/kagent_gpu_tests \
    --gtest_filter='${SPARES_FILTER:-PyTorchEval.ANewProblemTakesASpare*:PyTorchEval.ProblemsStay*:PyTorchEval.AProblemThat*}'"
  SP=$B/spares
  mkdir -p $SP/work
  for n in 1 0; do  # the first fills the cache (the warm-up): both measure on a warm one
    step spares ${SPARES_SWITCH_LIMIT:-200} python3 benchmarks/mixed_batch.py switch --kagent "$B/kagent" \
      --cache-dir "$SP/cache" --work "$SP/work" --kernelbench "$KB" --gpus 0 --budget-s ${SPARES_SWITCH_S:-140} \
      --serve-args "--spare-servers $n" --out $OUT/spares-switch-$n.json
  done
fi
if want credit; then
  # The warm-up's credit (a pass right after another counts its GPU busy time): its GPU test, then
  # 96 distinct native vector_add plans per row in one session, with the credit and without, each
  # preset, side by side (benchmarks/session_throughput.py --compare-credit).
  step credit ${CREDIT_TESTS_LIMIT:-120} bash -c "cd $B && ./tests/kagent_gpu_tests --gtest_filter='${CREDIT_FILTER:-GpuEval.AWarmUp*:GpuEval.MeasureKnobs*}'"
  step credit ${CREDIT_LIMIT:-300} python3 benchmarks/session_throughput.py --kagent $B/kagent --kernelbench "$KB" \
    --only native --native-n ${CREDIT_N:-96} --separate-n 0 --steady-from 24 --ahead-only --compare-credit --out $OUT/credit.json
fi
if want recheck; then
  # The re-check's comparison kernel (src/runner/harness_kernels.cu, compare): this build's against
  # each harness_kernels.cu named in $COMPARE_SOURCES, side by side on the same data; then the GPU
  # tests whose verdicts go through it.
  srcs=()
  for f in ${COMPARE_SOURCES:-}; do srcs+=(--compare-source "$f"); done
  step recheck 120 $B/benchmarks/sample_setup --samples 200 "${srcs[@]}"
  # RECHECK_NCU=1: Nsight Compute's view of this build's comparison kernel (one launch, after five).
  [ "${RECHECK_NCU:-0}" = 1 ] && step recheck-ncu 180 ncu --kernel-name kagent_compare_f32 --launch-skip 5 \
    --launch-count 1 --section SpeedOfLight --section ComputeWorkloadAnalysis --section WarpStateStats \
    --section Occupancy --section InstructionStats --section MemoryWorkloadAnalysis \
    $B/benchmarks/sample_setup --samples 8
  step recheck ${RECHECK_TESTS_LIMIT:-300} bash -c "cd $B && ./tests/kagent_gpu_tests --gtest_filter='${RECHECK_FILTER:-GpuEval.*:RefServerTest.*}'"
fi
if want gpu-tests; then
  # The GPU tests $GPU_TESTS_FILTER names (a gtest filter), in one process, in the order they are written.
  step gpu-tests ${GPU_TESTS_LIMIT:-300} bash -c "cd $B && ./tests/kagent_gpu_tests --gtest_filter='${GPU_TESTS_FILTER:-*}'"
fi
if want rate; then
  # The harness's own cost per evaluation: 96 distinct native vector_add plans (65 us) in one session
  # under each preset, steady rate from the 24th record; where a training evaluation's time goes;
  # one cached ModelNew solution named 8 times (a worker each, started ahead).
  # What each part of a timed sample's set-up costs apart (poison, flush, persisting-L2 reset).
  [ -x $B/benchmarks/sample_setup ] && step rate 60 $B/benchmarks/sample_setup --samples 400
  step rate ${RATE_LIMIT:-300} python3 benchmarks/session_throughput.py --kagent $B/kagent --kernelbench "$KB" \
    --only native --native-n 96 --separate-n 0 --steady-from 24 --out $OUT/rate.json
  RT=$OUT/rate-work
  mkdir -p $RT
  rplans=$(python3 -c "import sys; sys.path.insert(0, 'benchmarks'); import generated_candidates as g; print(' '.join(g.vector_add_set('$RT', 16, tag='tl')))")
  step rate 120 python3 benchmarks/eval_timeline.py --top 25 --kagent $B/kagent --skip-first 6 --log $OUT/timeline-native.log \
    -- $rplans --op examples/vector_add/op.json --preset training
  step rate ${RATE_MN_LIMIT:-300} python3 benchmarks/session_throughput.py --kagent $B/kagent --kernelbench "$KB" \
    --only modelnew-repeat --repeat-n 8 --out $OUT/rate-modelnew.json
fi
if want serve; then
  # kagent serve under load: 4 clients, 1000 requests of honest and cheating candidates mixed, each
  # verdict compared with kagent eval under the same preset; the service killed with SIGKILL halfway
  # and restarted. Needs cpp-httplib where kagent is built (pkg-config's cpp-httplib).
  step serve ${SERVE_LIMIT:-560} python3 benchmarks/serve_load.py --kagent $B/kagent --clients 4 \
    --requests ${SERVE_REQUESTS:-1000} --preset ${SERVE_PRESET:-training} --kill-restart --out $OUT/serve-load.json
  [ -n "${SERVE_TESTS:-}" ] && step serve 300 bash -c "cd $B && ./tests/kagent_serve_tests && ctest --output-on-failure -R kagent_ref_python_tests"
fi
if want episodes; then
  # The agent's episodes as sessions of kagent serve (benchmarks/session_episodes.py): EPISODES (64)
  # scripted episodes at once over 8 KernelBench problems and one of adversarial kernels; step
  # latencies, GPU busy share, episodes per hour, every verdict against kagent eval alone.
  step episodes ${EPISODES_LIMIT:-500} python3 benchmarks/session_episodes.py --kagent $B/kagent --kernelbench "$KB" \
    --gpus ${EPISODES_GPUS:-0} --episodes ${EPISODES:-64} --preset ${EPISODES_PRESET:-default} --work $B/episodes \
    --out $OUT/episodes.json
  [ -n "${EPISODES_TESTS:-}" ] && step episodes 200 bash -c "cd $B && ./tests/kagent_serve_tests --gtest_filter='Session*'"
fi
if want mixed; then
  # kagent serve keeping several problems warm per GPU (benchmarks/mixed_batch.py): an RL step of every
  # examples/kernelbench problem (>= 24) x MIXED_REQUESTS requests sent at once, shuffled against
  # sorted, each order to a fresh service on GPUs 0,1 after a warm-up (shuffled/sorted throughput,
  # goal >= 0.9); switching costs on GPU 0 (a switch back <= 0.2 s, a problem announced ahead <= 1 s
  # over a repeat); the ballast problems of benchmarks/ops/ballast with level1/19_ReLU on GPU 0
  # (evictions, no out-of-memory, nothing lost); then every served verdict against `kagent eval`
  # alone. The parts end by MIXED_END_S seconds after this script started (default 540, inside a
  # 10-minute call, the build included), each with its share of the time left (MIXED_PARTS picks
  # them); the cache and the warm-up's marker stay in the build folder, so that a later call on the
  # same machine starts warm (and one that is carried build-gpu/mixed/cache, from mixed-work.tgz).
  # Needs cpp-httplib where kagent is built (see .debs above).
  MX=$B/mixed
  rm -rf $MX/work && mkdir -p $MX/work
  mparts=" ${MIXED_PARTS:-orders switch eviction verdicts} "
  declare -A mweight=([orders]=50 [switch]=13 [eviction]=17 [verdicts]=20)
  # mixed_budget PART: PART's seconds, by its weight among the parts still to run, of what is left.
  mixed_budget() {
    local q rest=0 seen=0 left=$(( ${MIXED_END_S:-540} - SECONDS - 15 ))
    for q in orders switch eviction verdicts; do
      [[ $q == "$1" ]] && seen=1
      [[ $seen == 1 && $mparts == *" $q "* ]] && rest=$((rest + ${mweight[$q]}))
    done
    (( left < 60 )) && left=60
    echo $(( left * ${mweight[$1]} / rest ))
  }
  mx=(--kagent "$B/kagent" --cache-dir "$MX/cache" --work "$MX/work")
  if [[ $mparts == *" orders "* ]]; then
    mb=$(mixed_budget orders)
    # MIXED_ORDER=shuffled, then MIXED_ORDER=sorted in a later call on the same machine: one order
    # per call where both do not fit one (the second's table and ratio take the first's rows).
    # MIXED_NO_FIT=1 keeps MIXED_REQUESTS as asked.
    mo=${MIXED_ORDER:-both}
    morder=(--order "$mo")
    other=$MX/orders-$([[ $mo == sorted ]] && echo shuffled || echo sorted).json
    [[ $mo != both && -f $other ]] && morder+=(--with "$other")
    [[ ${MIXED_NO_FIT:-0} == 1 ]] && morder+=(--no-fit)
    step mixed $((mb + 60)) python3 benchmarks/mixed_batch.py orders "${mx[@]}" --kernelbench "$KB" --gpus 0,1 \
      --requests ${MIXED_REQUESTS:-8} --rounds ${MIXED_ROUNDS:-1} --budget-s $mb "${morder[@]}" \
      --out $OUT/mixed-orders-$mo.json
    if [ -f $OUT/mixed-orders-$mo.json ]; then  # this order's, and the latest for the verdicts part
      cp $OUT/mixed-orders-$mo.json $MX/orders-$mo.json
      cp $OUT/mixed-orders-$mo.json $MX/orders.json
    fi
  fi
  if [[ $mparts == *" switch "* ]]; then
    mb=$(mixed_budget switch)
    step mixed $((mb + 60)) python3 benchmarks/mixed_batch.py switch "${mx[@]}" --kernelbench "$KB" --gpus 0 \
      --budget-s $mb --out $OUT/mixed-switch.json
  fi
  if [[ $mparts == *" eviction "* ]]; then
    mb=$(mixed_budget eviction)
    step mixed $((mb + 60)) python3 benchmarks/mixed_batch.py eviction "${mx[@]}" --kernelbench "$KB" --gpus 0 \
      --requests-each ${MIXED_EVICTION_EACH:-6} --budget-s $mb --out $OUT/mixed-eviction.json
  fi
  if [[ $mparts == *" verdicts "* && -f $MX/orders.json ]]; then
    mb=$(mixed_budget verdicts)
    step mixed $((mb + 60)) python3 benchmarks/mixed_batch.py verdicts "${mx[@]}" --from $MX/orders.json \
      --kernelbench "$KB" --gpus 0,1 --budget-s $mb --out $OUT/mixed-verdicts.json
  fi
  # The services' logs, and the cache less torch's and Triton's compiled kernels (the compiled plans, the
  # baselines and the warm-up's marker): unpacked into build-gpu/mixed here and carried, a fresh machine
  # starts as warm as this one ends.
  tar -czf $OUT/mixed-work.tgz -C $MX --exclude=cache/inductor --exclude=cache/triton --exclude=cache/modelnew \
    work cache 2>/dev/null
fi
if want house; then
  # The code reorganized around one evaluator (candidate kinds, one score record, the child client)
  # measured beside the tree before it: KAGENT_BEFORE_TREE (a `git archive` of the older commit,
  # carried to the machine) built here too; evaluation latency in alternation, then the verdicts of
  # the same candidates by both (`kagent eval --json`: tier, status, stage), side by side.
  BT=${KAGENT_BEFORE_TREE:-build-before/src}
  step house-build 300 cmake -S "$BT" -B build-before/build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DKAGENT_BUILD_TESTS=OFF
  step house-build 300 cmake --build build-before/build -j 16 --target kagent kagent-runner kagent-jail-init \
    kagent-sandbox-exec kagent-compile eval_latency
  for round in $(seq ${HOUSE_ROUNDS:-2}); do
    echo "== before (round $round)" >> "$OUT/house.log"
    step house 200 build-before/build/benchmarks/eval_latency --reps 3 --repeat 5
    echo "== after (round $round)" >> "$OUT/house.log"
    step house 200 $B/benchmarks/eval_latency --reps 3 --repeat 5
  done
  step house-verdicts ${HOUSE_VERDICTS_LIMIT:-500} python3 benchmarks/verdicts_side_by_side.py --before build-before/build/kagent \
    --after $B/kagent --kernelbench "$KB"
fi
if want floors; then
  # Compute floors and tensor-core roofs, counters of graph plans and library steps, the operand
  # offsets of library steps (the RNN example), the judge's backend and several candidates at once.
  step floors 400 $B/tests/kagent_gpu_tests --gtest_filter='FloorsGpu.*:JudgeBackendGpu.*:CuptiGpu.*'
  step floors 120 $B/kagent profile --compact tests/gpu/kernels/graph_three_launches.cu --op examples/vector_add/op.json
  for f in level3/33_VanillaRNN level2/66_Matmul_Dropout_Softmax level2/83_Conv3d_GroupNorm_Min_Clamp_Dropout \
           level3/35_LSTM; do
    echo "== $f" >> "$OUT/floors.log"
    step floors 200 $B/kagent eval examples/kernelbench_library/$f.cu --op "$KB/$f.py" --precision fp32
  done
  step floors 200 $B/kagent eval examples/vector_add/cand_naive.cu examples/vector_add/cand_vec4.cu \
    tests/gpu/kernels/wrong.cu --op examples/vector_add/op.json
fi
if want all ncu; then
  step ncu 400 python3 benchmarks/ncu_agreement.py --kagent $B/kagent --evals 3
fi
if want all ncu roofline; then
  step roofline 200 python3 benchmarks/device_peaks.py --kagent $B/kagent
  step roofline 400 python3 benchmarks/metrics_agreement.py --kagent $B/kagent
fi

echo "== env"; cat "$OUT/env.log" | tail -n 25
[ -f "$OUT/tests.log" ] && { echo "== tests"; grep -E "tests passed|tests failed|\(Failed\)|\(Skipped\)|Timeout" "$OUT/tests.log" | head -30; }
[ -f "$OUT/bench.log" ] && { echo "== bench"; grep -v "^warning" "$OUT/bench.log" | tail -n 24; }
[ -f "$OUT/kernelbench.log" ] && { echo "== kernelbench"; grep -v "^warning\|^\[\|^Running\|^Note:" "$OUT/kernelbench.log" | tail -n 34; }
[ -f "$OUT/fixtures.log" ] && { echo "== fixtures"; tail -n 22 "$OUT/fixtures.log"; }
for run in first second; do [ -f "$OUT/level1-$run.log" ] && { echo "== level1 $run"; grep -E "recorded in|resume:|overall|level1 " "$OUT/level1-$run.log" | tail -n 8; }; done
[ -f "$OUT/problems.log" ] && { echo "== problems"; tail -n 12 "$OUT/problems.log"; }
[ -f "$OUT/multigpu.log" ] && { echo "== multigpu"; grep -E "evaluated problems|wall --gpus|PASSED|FAILED|SKIPPED" "$OUT/multigpu.log" | tail -n 12; }
[ -f "$OUT/check.log" ] && { echo "== check"; tail -n 8 "$OUT/check.log"; }
[ -f "$OUT/precision.log" ] && { echo "== precision"; grep -v "^\[\|^Note:" "$OUT/precision.log" | tail -n 30; }
[ -f "$OUT/margins.log" ] && { echo "== margins"; tail -n 14 "$OUT/margins.log"; }
[ -f "$OUT/precision-suite.log" ] && { echo "== precision-suite"; grep -v "^\[" "$OUT/precision-suite.log" | tail -n 70; }
[ -f "$OUT/tf32-accumulation.log" ] && { echo "== tf32-accumulation"; tail -n 8 "$OUT/tf32-accumulation.log"; }
[ -f "$OUT/shared-baselines.log" ] && { echo "== shared-baselines"; tail -n 40 "$OUT/shared-baselines.log"; }
[ -f "$OUT/task-floors.log" ] && { echo "== task-floors"; cut -c1-600 "$OUT/task-floors.log" | tail -n 30; }
[ -f "$OUT/ncu.log" ] && { echo "== ncu"; tail -n 12 "$OUT/ncu.log"; }
[ -f "$OUT/containment.log" ] && { echo "== containment"; grep -E "^\[ +(OK|FAILED|SKIPPED) +\]|tests? passed|Failure|Expected|Which is|actual" "$OUT/containment.log" | cut -c1-300 | tail -n 70; }
[ -f "$OUT/concurrent.log" ] && { echo "== concurrent"; tail -n 16 "$OUT/concurrent.log"; }
[ -f "$OUT/preset.log" ] && { echo "== preset"; grep -E "candidates of|built ahead|TIER DIFFERS|refused|tiers equal|default vs|wall per" "$OUT/preset.log" | tail -n 24; }
[ -f "$OUT/warmtests.log" ] && { echo "== warm-tests"; grep -E "^\[ +(OK|FAILED|SKIPPED) +\]|tests? passed|Failure|Expected|Which is" "$OUT/warmtests.log" | cut -c1-200 | tail -n 60; }
[ -f "$OUT/rate.log" ] && { echo "== rate"; grep -E "^(native|modelnew) |^ +[0-9.]+ +[0-9.]+%|^exit|^  !" "$OUT/rate.log" | cut -c1-160 | tail -n 40; }
[ -f "$OUT/throughput.log" ] && { echo "== throughput"; grep -E "^(native|pytorch|modelnew)|^  !" "$OUT/throughput.log" | tail -n 24; }
[ -f "$OUT/ahead.log" ] && { echo "== ahead"; grep -E "^\[ +(OK|FAILED|SKIPPED) +\]|tests? passed|Failure|Expected|Which is|actual|fixture" "$OUT/ahead.log" | cut -c1-300 | tail -n 40; }
[ -f "$OUT/timeline.log" ] && { echo "== timeline"; grep -vE "^warning" "$OUT/timeline.log" | cut -c1-150 | tail -n 80; }
[ -f "$OUT/serve.log" ] && { echo "== serve"; grep -E "clients,|answered|lost|SIGKILL|after the run|#[0-9]+ |tests? passed|FAILED" "$OUT/serve.log" | tail -n 30; }
[ -f "$OUT/mixed.log" ] && { echo "== mixed"; awk '/^(orders: [0-9]+ problems x|switch: GPUs .*, pattern|eviction: [0-9]+ problems x|verdicts: [0-9]+ served records of [0-9]+ problems against)/ {p = 1} p || /^mixed_batch|^Traceback|Error:/ {print} /^\(figures in/ {p = 0}' "$OUT/mixed.log" | cut -c1-240 | tail -n 90; }
[ -f "$OUT/episodes.log" ] && { echo "== episodes"; grep -vE "^\[ +(OK|RUN) +\]" "$OUT/episodes.log" | cut -c1-240 | tail -n 60; }
[ -f "$OUT/library.log" ] && { echo "== library"; grep -E "^== |PASSED|FAILED|SKIPPED|Failure|reward|^tier|error|^cupti|^candidate|^torch|ran: |step: |tiny launches|^\[[a-z_0-9]+\] " "$OUT/library.log" | tail -n 90; }
[ -f "$OUT/library-report.md" ] && { echo "== library bench level2"; tail -n 20 "$OUT/library-report.md"; }
[ -f "$OUT/house.log" ] && { echo "== house"; grep -v "^warning\|^\[" "$OUT/house.log" | tail -n 48; }
[ -f "$OUT/house-verdicts.log" ] && { echo "== house verdicts"; tail -n 40 "$OUT/house-verdicts.log"; }
[ -f "$OUT/floors.log" ] && { echo "== floors"; grep -E "^== |^\[ +(OK|FAILED|SKIPPED) +\]|tests? passed|Failure|reward|^tier|tier [-0-9]|counters|flag: |error|correctness" "$OUT/floors.log" | cut -c1-300 | tail -n 60; }
[ -f "$OUT/before-after.log" ] && { echo "== before-after"; grep -v "^warning\|^\[" "$OUT/before-after.log" | tail -n 48; }
[ -f "$OUT/before-after-ncu.log" ] && { echo "== before-after ncu"; grep -v "^==PROF==\|^warning" "$OUT/before-after-ncu.log" | tail -n 30; }
[ -f "$OUT/roofline.log" ] && { echo "== roofline"; grep -v "^==PROF==" "$OUT/roofline.log" | tail -n 45; }
[ -f "$OUT/modelnew.log" ] && { echo "== modelnew"; grep -E "^\[ +(OK|FAILED|SKIPPED) +\]|tests passed|Failure|tier |flag: " "$OUT/modelnew.log" | tail -n 60; }
for f in "$OUT"/modelnew-kb-*.log; do [ -f "$f" ] && { echo "== $(basename $f)"; grep -E "correctness|tier |flag: |cupti|^candidate|warning|error" "$f" | cut -c1-400 | tail -n 12; }; done
[ -f "$OUT/modelnew-bench.log" ] && { echo "== modelnew-bench"; tail -n 30 "$OUT/modelnew-bench.log"; }
[ -f "$OUT/modelnew-check.log" ] && { echo "== modelnew-check"; tail -n 12 "$OUT/modelnew-check.log"; }
echo "== steps"; printf '%s\n' "${summary[@]}"
