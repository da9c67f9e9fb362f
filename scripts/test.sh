#!/usr/bin/env bash
# Installs the dependencies, builds fxplain, and runs every test with ctest: first the Release
# build, then the whole suite again under AddressSanitizer + UndefinedBehaviorSanitizer with leak
# checking (set FXPLAIN_SKIP_ASAN=1 to skip the second run).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
# The tests that compare fxplain's results with XLA itself need jax: on the CPU
# (interp.types_vs_xla, rng.bit_generator_vs_xla) and real XLA:GPU, deviceless, from the pinned
# wheels scripts/xla_reference.py drives (label xla); fxplain itself never does. Best effort: the
# four pinned wheels (about 20 s on a fresh venv), else jax alone; without them those tests report
# skipped. FXPLAIN_PYTHON names the python that has them (a venv's); the xla tests run with it.
py=${FXPLAIN_PYTHON:-python3}
xla_wheels="jax==0.10.2 jaxlib==0.10.2 jax-cuda13-plugin==0.10.2 jax-cuda13-pjrt==0.10.2"
if ! "$py" - <<'PY' 2>/dev/null; then
import glob, importlib.metadata as m, os, jax_plugins
assert all(m.version(w) == "0.10.2" for w in ("jax", "jaxlib", "jax-cuda13-plugin", "jax-cuda13-pjrt"))
assert any(glob.glob(os.path.join(d, "xla_cuda*", "xla_cuda_plugin.so")) for d in jax_plugins.__path__)
PY
  # shellcheck disable=SC2086
  "$py" -m pip install --quiet --retries 1 --timeout 30 $xla_wheels ||
    { echo "note: real XLA:GPU ($xla_wheels) could not be installed; the xla tests will report skipped" >&2
      "$py" -c 'import jax' 2>/dev/null || "$py" -m pip install --quiet --retries 1 --timeout 30 jax ||
        echo "note: jax could not be installed; the tests that compare with XLA will report skipped" >&2; }
fi
export FXPLAIN_PYTHON="$(command -v "$py")"
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
