#!/usr/bin/env bash
# Golden test runner: runs fxplain with the arguments in NAME.args (shell words, run from the
# project root; NAME.stdin, when present, is piped in) and compares its combined output plus an
# "exit: N" line with NAME.out. UPDATE_GOLDEN=1 rewrites NAME.out instead.
set -u
fx=$1
args=$2
base=${args%.args}
export FXPLAIN_FXPLAIN="$fx" NO_COLOR=1 FXPLAIN_HISTORY=/dev/null
export FXPLAIN_CACHE_DIR="${FXPLAIN_CACHE_DIR:-${TMPDIR:-/tmp}/fxplain-test-cache-$(id -u)}"
# Pictures that scripts render without naming a file go here, not into the source tree.
export FXPLAIN_OUT_DIR="${FXPLAIN_OUT_DIR:-${TMPDIR:-/tmp}/fxplain-test-out-$(id -u)}"
mkdir -p "$FXPLAIN_OUT_DIR"
eval "set -- $(cat "$args")"
if [ -f "$base.stdin" ]; then
  actual=$("$fx" "$@" < "$base.stdin" 2>&1; echo "exit: $?")
else
  actual=$("$fx" "$@" < /dev/null 2>&1; echo "exit: $?")
fi
if [ "${UPDATE_GOLDEN:-0}" = 1 ]; then
  printf '%s\n' "$actual" > "$base.out"
  echo "updated $base.out"
  exit 0
fi
if [ ! -f "$base.out" ]; then
  echo "missing $base.out; actual output:"; printf '%s\n' "$actual"; exit 1
fi
if ! diff -u "$base.out" <(printf '%s\n' "$actual"); then
  echo "golden mismatch: $base.out (rerun with UPDATE_GOLDEN=1 after checking the diff)"
  exit 1
fi
