#!/usr/bin/env bash
# Every teaching script runs with --check on the CPU: the last stage of each pipeline (classic and
# priority), compiled by the native CPU backend, agrees with the reference interpreter on the
# program as loaded. The CartPole programs run 40 steps here (10,000 on the interpreter would take
# minutes); the walkthrough is a command script, checked by unit.test_variants.
#   scripts_check.sh FXPLAIN REPO_ROOT
set -euo pipefail
fx=$1
root=$2
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
export FXPLAIN_OUT_DIR=$out
fail=0
n=0
for s in "$root"/scripts/*.fx; do
  name=$(basename "$s" .fx)
  case $name in *walkthrough*) continue ;; esac
  src=$s
  if [[ $name == cartpole* ]]; then
    sed 's/^let steps = .*/let steps = 40/' "$s" >"$out/$name.fx"
    src=$out/$name.fx
  fi
  for pl in classic priority; do
    n=$((n + 1))
    if log=$("$fx" -e "load $src" -e "pipeline $pl" -e "goto 0" -e "step all" -e "run --backend cpu --check" 2>&1) &&
       grep -q '^check: every output agrees with the reference interpreter' <<<"$log"; then
      echo "ok   $name ($pl): $(grep '^kernels launched' <<<"$log")"
    else
      echo "FAIL $name ($pl):"
      tail -20 <<<"$log"
      fail=$((fail + 1))
    fi
  done
done
echo "$n runs, $fail failed"
[ "$fail" = 0 ]
