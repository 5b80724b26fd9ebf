#!/usr/bin/env bash
# The same seed gives the same per-process traces across processes
# (docs/architecture.md, "Determinism across processes"): unmodified Debian
# client/server programs as two processes on vfsim0 under
# `verbfault run --seed S --check-determinism -- SERVER ::: CLIENT`, which
# runs the pair twice and compares each process's trace byte for byte
# (exit 124 when they differ).
#
#   same_seed.sh VERBFAULT PORT
#
# ibv_rc_pingpong over 20 seeds (with -c, the server checks the data),
# its event-driven form (-e) and ibv_srq_pingpong (16 QPs on one SRQ, where
# answers and requests race on the wire) and ibv_ud_pingpong over 3 seeds
# each. A pair passes when both runs exit 0, the check says the traces are
# identical, each process wrote more than 400 records, and no trace says
# the wall clock decided anything ("not deterministic").
set -uo pipefail
verbfault=${1:?usage: same_seed.sh VERBFAULT PORT}
port=${2:?usage: same_seed.sh VERBFAULT PORT}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failures=0

check() {  # check SEED PROGRAM ARGS...
  local seed=$1 prog=$2; shift 2
  local args=(-d vfsim0 -p "$port" "$@")
  local log="$work/$prog-$seed.log"
  "$verbfault" run --seed "$seed" --check-determinism --timeout 60 --trace "$work/t.jsonl" \
    -- "$prog" "${args[@]}" ::: "$prog" "${args[@]}" localhost >"$log" 2>&1
  local status=$?
  local why=""
  if ((status != 0)); then
    why="exit $status"
  elif ! grep -q "determinism check passed: identical traces" "$log"; then
    why="no determinism verdict"
  elif grep -q "not deterministic" "$log"; then
    why="the wall clock decided something"
  else
    local records
    for records in $(sed -n 's/.*: exit 0, trace hash [0-9a-f]* (\([0-9]*\) records).*/\1/p' "$log"); do
      ((records > 400)) || why="a trace of $records records"
    done
    [[ $(grep -c ": exit 0, trace hash" "$log") -ge 2 ]] || why="not both processes reported"
  fi
  if [[ -n $why ]]; then
    echo "same_seed: $prog ${*} seed $seed: FAIL: $why" >&2
    tail -n 15 "$log" | sed 's/^/    /' >&2
    failures=$((failures + 1))
  else
    echo "same_seed: $prog $* seed $seed: identical traces"
  fi
  port=$((port + 1))
}

for seed in $(seq 1 20); do check "$seed" ibv_rc_pingpong -n 20 -c; done
for seed in 1 2 3; do check "$seed" ibv_rc_pingpong -n 20 -e; done
for seed in 1 2 3; do check "$seed" ibv_srq_pingpong -n 20 -c; done
for seed in 1 2 3; do check "$seed" ibv_ud_pingpong -n 20 -c; done
if ((failures > 0)); then
  echo "same_seed: $failures pair(s) failed" >&2
  exit 1
fi
echo "same_seed: every pair gave byte-identical per-process traces"
