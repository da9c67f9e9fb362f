#!/usr/bin/env bash
# Replays XLA's own priority-fusion log for every corpus module in tests/xla/h100 (replay.c) and
# holds the share of agreeing steps as floors. Usage: replay_corpus.sh REPLAY REFDIR WORKDIR [ARGS]
set -euo pipefail
replay=$1 ref=$2 work=$3
shift 3
mkdir -p "$work"
args=()
for dump in "$ref"/*.priority_fusion_dump.txt.gz; do
  name=$(basename "$dump" .priority_fusion_dump.txt.gz)
  pre="$ref/$name.pre_fusion.hlo.gz"
  [ -f "$pre" ] || { echo "missing $pre" >&2; exit 2; }
  gzip -dc "$pre" > "$work/$name.pre_fusion.hlo"
  # XLA's proto dump of it: its instruction ids (the replay takes them, as fxplain's load does)
  if [ -f "$ref/$name.pre_fusion.hlo.pb.gz" ]; then
    gzip -dc "$ref/$name.pre_fusion.hlo.pb.gz" > "$work/$name.pre_fusion.hlo.pb"
  else
    rm -f "$work/$name.pre_fusion.hlo.pb"
  fi
  gzip -dc "$dump" > "$work/$name.dump.txt"
  args+=("$work/$name.pre_fusion.hlo" "$work/$name.dump.txt")
done
exec "$replay" --quiet "$@" "${args[@]}"
