#!/bin/bash
# cpu_compile.sh — how long the CPU backend takes to compile a module's generated kernels, with one
# compiler process (`set threads 1`) and with one per thread (`set threads N`, N = the machine's
# CPUs unless given), each from an empty kernel cache, side by side in one run.
#   bash bench/cpu_compile.sh [MODULE] [N] [BUILD]
# Default module: the corpus's Gemma 4 (1,451 generated kernels, 1.4 MB of C). Prints the wall time
# of prepare + run for each, and the ratio. A bench, not a test: the machine's load is printed too.
set -u
M=${1:-tests/data/hlo-corpus/hlo_gemma4_2b_bf16.hlo}
N=${2:-$(nproc)}
B=${3:-build}
echo "cpu_compile: $M, threads 1 and $N; load $(cut -d' ' -f1-3 /proc/loadavg)"
for t in 1 "$N"; do
  d=$(mktemp -d)
  t0=$(date +%s.%N)
  FXPLAIN_CACHE_DIR=$d "$B/fxplain" "$M" -e "set device h100; pipeline priority; step all; set threads $t; run --backend cpu" \
    > "$d.log" 2>&1
  rc=$?
  t1=$(date +%s.%N)
  units=$(ls "$d"/*.so 2>/dev/null | wc -l)
  secs=$(awk -v a="$t0" -v b="$t1" 'BEGIN{printf "%.1f", b-a}')
  echo "threads $t: exit $rc, $units compiled units, $secs s (pipeline, compile and run; $(grep -o 'time [0-9.]* [a-z]*s' "$d.log" | tail -1))"
  eval "w$t=$secs"
  rm -rf "$d" "$d.log"
done
awk -v a="$w1" -v b="$(eval echo \$w$N)" 'BEGIN{printf "one process per thread: %.2fx the time of one process\n", b/a}'
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
