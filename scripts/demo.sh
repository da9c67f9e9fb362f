#!/usr/bin/env bash
# Installs the dependencies, builds fxplain, and runs the CartPole walkthrough (the paper's case
# study). With --repl, starts the interactive shell instead.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
bash scripts/build.sh build
if [ "${1:-}" = "--repl" ]; then exec ./build/fxplain; fi
if [ -f scripts/cartpole_walkthrough.fx ]; then exec ./build/fxplain scripts/cartpole_walkthrough.fx; fi
# Without the walkthrough script, the shell opens with the CartPole model loaded.
exec ./build/fxplain -i scripts/cartpole.fx
