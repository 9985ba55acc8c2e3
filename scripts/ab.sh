#!/usr/bin/env bash
# Back-to-back A/B of two `sluice` binaries with the main job's commands, the way the
# project compares builds on a shared, noisy machine: each round runs `bench tpcb --json`
# and `bench tatp --json` (their defaults: real disk, elr-pipelined and classic) with both
# binaries, in an order that alternates every round, each run a fresh process; every row
# is appended to OUT as one JSON object tagged with its round and binary. Summarise with
# `python3 scripts/ab_summary.py OUT`.
#
# usage: scripts/ab.sh BASE_BINARY NEW_BINARY ROUNDS OUT.jsonl [WORKLOAD ...]
#   WORKLOAD: tpcb, tatp (default both), or e.g. "tpcb --commit elr-pipelined".
set -euo pipefail
if [ $# -lt 4 ]; then
  sed -n '2,10p' "$0" | sed 's/^# \{0,1\}//'
  exit 2
fi
base=$1 new=$2 rounds=$3 out=$4
shift 4
workloads=("$@")
[ ${#workloads[@]} -gt 0 ] || workloads=(tpcb tatp)
for b in "$base" "$new"; do
  [ -x "$b" ] || { echo "ab.sh: $b is not an executable" >&2; exit 2; }
done
for r in $(seq 1 "$rounds"); do
  if [ $((r % 2)) -eq 1 ]; then order=(base new); else order=(new base); fi
  for w in "${workloads[@]}"; do
    for tag in "${order[@]}"; do
      if [ "$tag" = base ]; then bin=$base; else bin=$new; fi
      # shellcheck disable=SC2086 # the workload string carries its own flags
      "$bin" bench $w --json 2>/dev/null | grep '^{' |
        sed "s/^{/{\"round\":$r,\"bin\":\"$tag\",/" >> "$out"
    done
  done
  echo "round $r of $rounds done" >&2
done
