#!/usr/bin/env bash
# Builds the libFuzzer targets with clang (ASan + UBSan) into build-fuzz/ and runs each for
# FUZZ_SECONDS (default 60) from its seeds, with a fixed random seed (FUZZ_SEED, default 1) so a
# run explores the same inputs each time. A crash leaves its input in build-fuzz/crashes/TARGET;
# copy it into tests/fuzz/regress/TARGET/ so the normal test suite replays it from then on.
# Prints one line per target: executions, time, and whether it found anything.
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${FUZZ_SECONDS:-60}
CC=clang cmake -S . -B build-fuzz -DCMAKE_BUILD_TYPE=Debug -DFXPLAIN_FUZZ=ON -DFXPLAIN_SANITIZE=ON >/dev/null
cmake --build build-fuzz -j"$(nproc)" --target fuzz_hlo fuzz_fx fuzz_pipeline fuzz_commands >/dev/null
declare -A seeds=(
  [hlo]="tests/hlo/errors tests/hlo/data tests/fuzz/regress/hlo"
  [fx]="tests/fx/errors scripts tests/fuzz/regress/fx"
  [pipeline]="tests/hlo/data tests/fuzz/regress/pipeline"
  [commands]="tests/repl/fuzz_seeds tests/repl/data"
)
status=0
for t in hlo fx pipeline commands; do
  work=build-fuzz/corpus/$t
  crashes=build-fuzz/crashes/$t
  mkdir -p "$work" "$crashes"
  for d in ${seeds[$t]}; do
    [ -d "$d" ] && find "$d" -maxdepth 1 -type f -size -64k -exec cp -n {} "$work/" \; 2>/dev/null || true
  done
  log=build-fuzz/fuzz_$t.log
  if ASAN_OPTIONS=detect_leaks=1 ./build-fuzz/tests/fuzz_$t "$work" -max_total_time="$secs" -max_len=65536 \
       -seed="${FUZZ_SEED:-1}" -timeout=10 -rss_limit_mb=2048 -artifact_prefix="$crashes/" -print_final_stats=1 >"$log" 2>&1; then
    result="no crash"
  else
    result="FOUND A CRASH (see $log and $crashes)"
    status=1
  fi
  execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' || echo "?")
  echo "fuzz_$t: ${secs}s, $execs executions, corpus $(ls "$work" | wc -l) inputs: $result"
done
exit $status
