#!/bin/bash
# gpu_check.sh — everything only a GPU can show, in one run, for a machine with an NVIDIA GPU:
#   1. the device as fxplain sees it (`devices`);
#   2. the tests labelled gpu (`ctest -L gpu`: every teaching script and a corpus subset launched
#      and checked against the interpreter, and the differential generator's graphs);
#   3. `run --backend gpu --check` and `profile --backend gpu` on the teaching scripts and on
#      corpus modules, the last stage of each pipeline;
#   4. the GPU CartPole bench (bench/cartpole_gpu.md) and real XLA:GPU on the same programs
#      (bench/cartpole_jax_gpu.py, needs jax with its CUDA plugin).
# Each step has a time limit, and GPU_CHECK_SECONDS (if set) bounds the whole run: a step gets no
# more than what is left of it, and steps are ordered by what they prove, the tests first.
# Output goes to OUTDIR/gpu_check.log; a summary table comes last.
# Usage (repository root, after `cmake --build build`): bash scripts/gpu_check.sh [BUILD] [OUTDIR]
set -u
END=$(($(date +%s) + ${GPU_CHECK_SECONDS:-86400}))
B=${1:-build}
O=${2:-gpu-check}
mkdir -p "$O"
LOG=$O/gpu_check.log
: >"$LOG"
SUMMARY=""
FX=$B/fxplain
export FXPLAIN_CACHE_DIR=${FXPLAIN_CACHE_DIR:-$PWD/$B/kernel-cache}

say() { echo "$*" | tee -a "$LOG"; }
# step NAME SECONDS CMD...: runs CMD with a time limit, its output into the log, and notes the outcome.
step() {
  local name=$1 limit=$2
  shift 2
  local left=$((END - $(date +%s) - 5))
  [ "$left" -lt "$limit" ] && limit=$left
  if [ "$limit" -le 0 ]; then
    SUMMARY="$SUMMARY$(printf '%-34s %-10s' "$name" "no time")"$'\n'
    return
  fi
  say ""
  say "=== $name (limit ${limit} s): $*"
  local t0 t1 rc
  t0=$(date +%s.%N)
  timeout "$limit" "$@" 2>&1 | tee -a "$LOG"
  rc=${PIPESTATUS[0]}
  t1=$(date +%s.%N)
  local secs
  secs=$(awk -v a="$t0" -v b="$t1" 'BEGIN{printf "%.1f", b-a}')
  local what=ok
  [ "$rc" = 0 ] || what="exit $rc"
  [ "$rc" = 124 ] && what="timed out"
  [ "$rc" = 77 ] && what="skipped"
  say "=== $name: $what in $secs s"
  SUMMARY="$SUMMARY$(printf '%-34s %-10s %8s s' "$name" "$what" "$secs")"$'\n'
}

command -v nvidia-smi >/dev/null && step nvidia-smi 20 nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,clocks.max.mem --format=csv
step devices 60 "$FX" -e devices

if command -v ctest >/dev/null; then
  step "ctest -L gpu" 300 ctest --test-dir "$B" -L gpu -j2 --output-on-failure -V
else
  say "no ctest here: running the gpu tests' commands as ctest would"
  step gpu.runtime 300 "$B/tests/gpu_run" tests/gpu/loop_dot_rng.hlo tests/gpu/conv.hlo \
    $(ls scripts/*.fx | grep -v walkthrough) tests/data/hlo-corpus/layer_norm_1x4096x768_bf16.hlo \
    tests/data/hlo-corpus/mha_block_1x12x128x64_bf16.hlo tests/data/hlo-corpus/bench_scan_N2000_M3.hlo
  step gpu.differential 300 "$B/tests/runtime_diff" 200 1 gpu
fi

# (1,000 steps: the unfused row alone launches 87,001 kernels per run)
step bench_cartpole_gpu 240 stdbuf -oL "$B/bench/bench_cartpole_gpu" --steps 1000 --repeat 3 --device h100
if command -v python3 >/dev/null; then
  step "xla:gpu cartpole" 120 python3 bench/cartpole_jax_gpu.py 1000 5
fi

# run --check on the last stage of each pipeline, per teaching script and corpus module (--keep-going:
# a teaching script's own render commands need Graphviz's layout plugins, which a bare machine may lack)
CHECK_FILES="scripts/cartpole.fx scripts/cartpole_separate.fx scripts/softmax.fx scripts/layernorm.fx
  scripts/mlp.fx scripts/adam.fx scripts/conv.fx
  tests/data/hlo-corpus/layer_norm_1x4096x768_bf16.hlo tests/data/hlo-corpus/mha_block_1x12x128x64_bf16.hlo
  tests/data/hlo-corpus/sum_axis_1x4096x1024_bf16.hlo tests/data/hlo-corpus/gpu_hlo.hlo"
# (teaching scripts at 100 simulation steps, as gpu.runtime runs them)
TMPS=$(mktemp -d)
mkdir -p "$TMPS/scripts"
for f in $CHECK_FILES; do
  [ -f "$f" ] || continue
  case $f in *.fx)
    sed 's/^let steps = [0-9]*/let steps = 100/' "$f" >"$TMPS/$f"
    f=$TMPS/$f ;;
  esac
  for p in classic priority; do
    step "check $(basename "$f") $p" 120 "$FX" --keep-going "$f" -e "pipeline $p; step all; run --backend gpu --check; profile --backend gpu"
  done
done

rm -rf "$TMPS"

say ""
say "=== summary"
printf '%s' "$SUMMARY" | tee -a "$LOG"
