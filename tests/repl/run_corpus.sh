#!/usr/bin/env bash
# Runs an error corpus: a file of cases, each
#     === NAME
#     $ ARGS              fxplain's arguments (shell words, run from the project root)
#     < STDIN             optional: printf '%b' of this text is piped in (else /dev/null)
#     EXPECTED OUTPUT     combined stdout+stderr, byte for byte
#     exit: N             the exit status
# and checks every case. Lines before the first case that start with '#' are comments.
# UPDATE_GOLDEN=1 rewrites the expected outputs (read the diff before committing).
set -u
fx=$1
corpus=$2
export NO_COLOR=1 FXPLAIN_HISTORY=/dev/null
export FXPLAIN_CACHE_DIR="${FXPLAIN_CACHE_DIR:-${TMPDIR:-/tmp}/fxplain-test-cache-$(id -u)}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export FXPLAIN_TEST_TMP=$tmp

header=()   # comment lines before the first case
names=() argss=() stdins=() expects=()
cur=-1
while IFS= read -r line || [ -n "$line" ]; do
  if [[ $line == "=== "* ]]; then
    cur=$((cur + 1))
    names[cur]=${line#=== }
    argss[cur]=""
    stdins[cur]=""
    expects[cur]=""
    state=args
  elif [ $cur -lt 0 ]; then
    header+=("$line")
  elif [ "$state" = args ] && [[ $line == '$ '* || $line == '$' ]]; then
    argss[cur]=${line#\$}
    argss[cur]=${argss[cur]# }
    state=stdin
  elif [ "$state" = stdin ] && [[ $line == '< '* ]]; then
    stdins[cur]=${line#< }
    state=expect
  else
    state=expect
    expects[cur]+="$line"$'\n'
  fi
done < "$corpus"

fail=0
new=$(mktemp)
printf '%s\n' "${header[@]}" > "$new"
for ((i = 0; i <= cur; i++)); do
  eval "set -- ${argss[i]}"
  if [ -n "${stdins[i]}" ]; then
    actual=$(printf '%b' "${stdins[i]}" | "$fx" "$@" 2>&1; echo "exit: $?")
  else
    actual=$("$fx" "$@" < /dev/null 2>&1; echo "exit: $?")
  fi
  # The scratch directory's name changes from run to run: show it as $TMP.
  actual=${actual//"$tmp"/\$TMP}
  expected=${expects[i]%$'\n'}
  # Strip trailing blank lines the file may have between cases.
  while [[ $expected == *$'\n' ]]; do expected=${expected%$'\n'}; done
  if [ "$actual" != "$expected" ]; then
    if [ "${UPDATE_GOLDEN:-0}" != 1 ]; then
      echo "FAIL: ${names[i]}"
      diff -u <(printf '%s\n' "$expected") <(printf '%s\n' "$actual") | tail -n +3
      fail=$((fail + 1))
    fi
  fi
  {
    echo "=== ${names[i]}"
    if [ -n "${argss[i]}" ]; then echo "\$ ${argss[i]}"; else echo '$'; fi
    [ -n "${stdins[i]}" ] && echo "< ${stdins[i]}"
    printf '%s\n\n' "$actual"
  } >> "$new"
done
if [ "${UPDATE_GOLDEN:-0}" = 1 ]; then
  # Drop the final blank line.
  sed -i '$ { /^$/ d }' "$new"
  cp "$new" "$corpus"
  echo "updated $corpus ($((cur + 1)) cases)"
  rm -f "$new"
  exit 0
fi
rm -f "$new"
echo "$((cur + 1)) cases, $fail failed"
[ $fail -eq 0 ]
