#!/usr/bin/env bash
# Installs the dependencies, builds fxplain, and runs every test with ctest: first the Release
# build, then the whole suite again under AddressSanitizer + UndefinedBehaviorSanitizer with leak
# checking (set FXPLAIN_SKIP_ASAN=1 to skip the second run).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
bash scripts/build.sh build
# The tests that compare fxplain's results with XLA itself (interp.types_vs_xla,
# rng.bit_generator_vs_xla) need jax on the CPU; fxplain never does. Without it they report skipped.
if ! python3 -c 'import jax' 2>/dev/null; then
  python3 -m pip install --quiet --retries 1 --timeout 30 jax ||
    echo "note: jax could not be installed; the tests that compare with XLA will report skipped" >&2
fi
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
