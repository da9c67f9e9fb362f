#!/usr/bin/env bash
# Installs the dependencies, builds fxplain, and runs every test with ctest: first the Release
# build, then the whole suite again under AddressSanitizer + UndefinedBehaviorSanitizer with leak
# checking (set FXPLAIN_SKIP_ASAN=1 to skip the second run).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
bash scripts/build.sh build
# GPU-only tests (label "gpu") report themselves skipped on machines without a GPU.
(cd build && ctest --output-on-failure -j"$(nproc)")
if [ "${FXPLAIN_SKIP_ASAN:-0}" != 1 ]; then
  bash scripts/build.sh build-asan -DCMAKE_BUILD_TYPE=Debug -DFXPLAIN_SANITIZE=ON
  export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
  (cd build-asan && ctest --output-on-failure -j"$(nproc)" -LE 'gpu|slow')
fi
# Fuzzing, bounded: each libFuzzer target for FUZZ_SECONDS (set FXPLAIN_SKIP_FUZZ=1 to skip).
if [ "${FXPLAIN_SKIP_FUZZ:-0}" != 1 ]; then
  FUZZ_SECONDS=${FUZZ_SECONDS:-60} bash scripts/fuzz.sh
fi
