#!/usr/bin/env bash
# The same seed gives the same per-process traces across processes
# (docs/local-fabric.md, "Determinism across processes"): unmodified Debian
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
# each; ucmatose, udaddy and rdma_server/rdma_client, which connect through
# the simulated connection manager, over 2, and ucmatose under cm_reject
# (the pair's traces must show the fault). A pair
# passes when both runs exit as expected (0, or the fault's status), the
# check says the traces are
# identical, each process wrote more than a floor of records (400 for the
# pingpongs), and no trace says
# the wall clock decided anything ("not deterministic").
set -uo pipefail
verbfault=${1:?usage: same_seed.sh VERBFAULT PORT}
port=${2:?usage: same_seed.sh VERBFAULT PORT}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failures=0

# pair SEED LABEL MIN_RECORDS SERVER... ::: CLIENT...
# With `fault` set (a --fault rule), the run is under it, and with `status`
# set, that is the exit status both runs must give (0 otherwise).
fault="" status_wanted=0
pair() {
  local seed=$1 label=$2 min_records=$3; shift 3
  local log="$work/${label// /_}-$seed.log"
  local options=(--seed "$seed" --check-determinism --timeout 60 --trace "$work/t.jsonl")
  [[ -n $fault ]] && options+=(--fault "$fault")
  rm -f "$work"/t.jsonl*  # no trace of an earlier pair may answer for this one
  # A run that fails ends its peers after a second, not the default 5.
  ((status_wanted != 0)) && options+=(--peer-grace 1)
  "$verbfault" run "${options[@]}" -- "$@" >"$log" 2>&1
  local status=$?
  local why=""
  if ((status != status_wanted)); then
    why="exit $status, not $status_wanted"
  elif ! grep -q "determinism check passed: identical traces" "$log"; then
    why="no determinism verdict"
  elif grep -q "not deterministic" "$log"; then
    why="the wall clock decided something"
  elif [[ -n $fault ]] && ! grep -q '"fault"' "$work"/t.jsonl.*.1; then
    why="the fault never fired"
  else
    local records
    for records in $(sed -n 's/.*: exit [0-9]*, trace hash [0-9a-f]* (\([0-9]*\) records).*/\1/p' "$log"); do
      ((records > min_records)) || why="a trace of $records records"
    done
    [[ $(grep -c ": exit [0-9]*, trace hash" "$log") -ge 2 ]] || why="not both processes reported"
  fi
  if [[ -n $why ]]; then
    echo "same_seed: $label seed $seed: FAIL: $why" >&2
    tail -n 15 "$log" | sed 's/^/    /' >&2
    failures=$((failures + 1))
  else
    echo "same_seed: $label seed $seed: identical traces"
  fi
  port=$((port + 1))
}

check() {  # check SEED PROGRAM ARGS...
  local seed=$1 prog=$2; shift 2
  local args=(-d vfsim0 -p "$port" "$@")
  pair "$seed" "$prog $*" 400 "$prog" "${args[@]}" ::: "$prog" "${args[@]}" localhost
}

for seed in $(seq 1 20); do check "$seed" ibv_rc_pingpong -n 20 -c; done
for seed in 1 2 3; do check "$seed" ibv_rc_pingpong -n 20 -e; done
for seed in 1 2 3; do check "$seed" ibv_srq_pingpong -n 20 -c; done
for seed in 1 2 3; do check "$seed" ibv_ud_pingpong -n 20 -c; done
# Connected through the simulated connection manager (rdmacm-utils):
# single-threaded programs, an event loop (ucmatose over RC, udaddy over
# UD) and synchronous ids (rdma_server, rdma_client).
for seed in 1 2; do
  pair "$seed" "ucmatose" 40 ucmatose -p "$port" ::: ucmatose -s 127.0.0.1 -p "$port"
  # udaddy's own defect (scenarios/stacks/run_stack.sh: ten unsignaled
  # sends on a queue of ten) is not this test's question.
  VERBFAULT_CHECKS=-resource.unsignaled_sends_fill_queue \
    pair "$seed" "udaddy" 40 udaddy ::: udaddy -s 127.0.0.1
  pair "$seed" "rdma_server" 20 rdma_server -p "$port" ::: rdma_client -s 127.0.0.1 -p "$port"
done
# Under the connection manager's faults: a connection rejected
# (ucmatose's client ends with exit 28, the connect's error, in both runs;
# its server, which waits on for a client and has no verbs call to trace,
# is ended). Not yet: an event held back (cm_delay) on a loaded machine
# (CI): ucmatose's client polled its CQ empty 9 times in one run and found
# its receive at once in the other, seed 2 (docs/local-fabric.md).
for seed in 1 2; do
  fault="cm_reject" status_wanted=28 \
    pair "$seed" "ucmatose cm_reject" -1 ucmatose -p "$port" ::: ucmatose -s 127.0.0.1 -p "$port"
done
if ((failures > 0)); then
  echo "same_seed: $failures pair(s) failed" >&2
  exit 1
fi
echo "same_seed: every pair gave byte-identical per-process traces"
