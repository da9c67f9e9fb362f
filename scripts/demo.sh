#!/usr/bin/env bash
# Installs the dependencies, builds fxplain, and runs the CartPole walkthrough (the paper's case
# study). With --repl, starts the interactive shell instead.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
bash scripts/build.sh build
if [ "${1:-}" = "--repl" ]; then exec ./build/fxplain; fi
exec ./build/fxplain scripts/cartpole_walkthrough.fx
