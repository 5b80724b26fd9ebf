#!/usr/bin/env bash
# The field failures (scenarios/field_failures/FNN) on one provider: each
# buggy program over the seeds of its expect.yaml until one ends with a
# verdict (exit 121 or 122, or a signal), each fixed program over the same
# seeds (every run must exit 0). Prints one table row per field failure:
#
#   FNN  buggy: exit 122 (seed 3, liveness.hang) in 2.1 s  fixed: 0 x20
#
# and exits 1 when a buggy program ended with no verdict on every seed, or
# a fixed one failed. The first device listed is the one used: on the host
# vfsim0; in the rxe VM (scripts/rxe-field-failures.sh) rxe0, with
# VERBFAULT_SIM_DEVICES=0. HANG_AFTER (seconds, default 2) is the hang
# watchdog's time; SEEDS_MAX bounds the seeds of each (default: all); JOBS
# (default 1) field failures at a time, the connection manager's always
# alone (on a real provider they listen on the kernel's ports).
#
#   scripts/field-failures-table.sh [BUILD_DIR]
set -uo pipefail
cd "$(dirname "$0")/.."
build="${1:-build}"
hang_after="${HANG_AFTER:-2}"
seeds_max="${SEEDS_MAX:-1000}"
jobs="${JOBS:-1}"
if ! [[ "$jobs" =~ ^[1-9][0-9]?$ ]]; then
  echo "field-failures-table.sh: JOBS=$jobs: expected a number of field failures at a time, 1 to 99" >&2
  exit 2
fi
cli="$build/harness/cli/verbfault"
rows=$(mktemp -d)
trap 'rm -rf "$rows"' EXIT
# One field failure: its row in $rows/ID, and $rows/ID.bad when it failed.
table_row() {
  local dir=$1 id=$2 cm=$3
  local program="$build/scenarios/field_failures/field_failure_$id"
  # The connection manager's field failures connect to the port's address:
  # on a real provider (rxe0 in the VM, VERBFAULT_SIM_DEVICES=0) rxe0's
  # (RXE_IP), where the kernel's rdma_cm is relayed and their cm_* faults
  # made at effect level (provider/cm_relay.h).
  local cm_address=()
  if [ "$cm" = 1 ] && [ "${VERBFAULT_SIM_DEVICES:-}" = 0 ]; then
    cm_address=(FIELD_FAILURE_CM_ADDRESS="${RXE_IP:-10.0.0.1}")
  fi
  local bad=0
  range=$(sed -n 's/^seeds: *\([0-9]*\)\.\.\([0-9]*\).*/\1 \2/p' "$dir/expect.yaml")
  read -r first last <<<"$range"
  [ $((last - first + 1)) -gt "$seeds_max" ] && last=$((first + seeds_max - 1))
  run() {  # run VARIANT SEED: sets status, checks
    local output
    output=$(env "${cm_address[@]}" "$cli" run --seed "$2" --hang-after "$hang_after" --timeout 60 \
      --plan "$dir/plan.yaml" -- "$program" "$1" 2>&1)
    status=$?
    checks=$(grep -o 'check [a-z_.]* on' <<<"$output" | awk '{print $2}' | sort -u | paste -sd, -)
  }
  started=$EPOCHREALTIME
  buggy="no verdict on seeds $first..$last"
  for seed in $(seq "$first" "$last"); do
    run buggy "$seed"
    if [ "$status" -ne 0 ] && [ "$status" -ne 143 ]; then
      buggy="exit $status (seed $seed${checks:+, $checks})"
      break
    fi
  done
  buggy_time=$(awk -v a="$started" -v b="$EPOCHREALTIME" 'BEGIN { print b - a }')
  [[ "$buggy" == no* ]] && bad=1
  fixed_statuses=""
  for seed in $(seq "$first" "$last"); do
    run fixed "$seed"
    fixed_statuses+="$status${checks:+($checks)} "
    [ "$status" -ne 0 ] && bad=1
  done
  fixed=$(tr ' ' '\n' <<<"$fixed_statuses" | sed '/^$/d' | sort | uniq -c |
    awk '{printf "%s%s x%s", (NR > 1 ? ", " : ""), $2, $1}')
  printf '%s  buggy: %s in %.1f s  fixed: %s\n' "$id" "$buggy" "$buggy_time" "$fixed" >"$rows/$id"
  [ "$bad" -eq 0 ] || touch "$rows/$id.bad"
}
ids=()
for dir in scenarios/field_failures/F[0-9][0-9]_*; do
  id=$(basename "$dir"); id=${id%%_*}  # F01_flush_lost: F01
  ids+=("$id")
  cm=0
  grep -q 'kind: cm_' "$dir/plan.yaml" && cm=1
  if [ "$cm" = 1 ] || [ "$jobs" -eq 1 ]; then
    wait
    table_row "$dir" "$id" "$cm"
  else
    while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do wait -n; done
    table_row "$dir" "$id" "$cm" &
  fi
done
wait
bad=0
for id in "${ids[@]}"; do
  if [ -f "$rows/$id" ]; then cat "$rows/$id"; else echo "$id  no row (its runs ended abnormally)"; bad=1; fi
  [ -f "$rows/$id.bad" ] && bad=1
done
exit "$bad"
