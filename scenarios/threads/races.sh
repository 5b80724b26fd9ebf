#!/usr/bin/env bash
# The think-time races (think_time_races.cpp) under `verbfault run`:
#   races.sh VERBFAULT PROGRAM SHAPE
# 1. the buggy client is found on seed 1 by the race's named fault
#    (stranded: delayed_completion, which holds the answer past the empty
#    poll, and poll.stranded_between_poll_and_arm says so; one_per_event:
#    coalesce_cq_event, one event for both answers, and the client waits
#    for a second that never comes: poll.wait_without_drain). Each is told
#    when the run hangs, before the hang (the peer spinning on its CQ):
#    checkers.cpp, report_causes_of_hang;
# 2. the fixed client passes seed 1 under the same fault;
# 3. the fixed client passes seeds 1..20 with no fault;
# 4. seeds alone find the buggy client: at least 20 of seeds 1..100 fail
#    with no fault (the scheduler's preemption holds the client between
#    its empty poll and its arm, or between its wake-up and its next poll,
#    while the peer's think time passes: docs/threads-and-time.md,
#    "Preemption").
set -uo pipefail
verbfault=${1:?usage: races.sh VERBFAULT PROGRAM SHAPE}
program=${2:?usage: races.sh VERBFAULT PROGRAM SHAPE}
shape=${3:?usage: races.sh VERBFAULT PROGRAM SHAPE}
case $shape in
  stranded) fault="delayed_completion(1) p=1"; found="check poll.stranded_between_poll_and_arm on cq#0" ;;
  one_per_event) fault="coalesce_cq_event"; found="check poll.wait_without_drain on cq#0" ;;
  *) echo "races.sh: SHAPE '$shape': expected stranded or one_per_event" >&2; exit 2 ;;
esac
failed=0
# expect WHAT GOOD_WHEN -- COMMAND...: runs COMMAND; GOOD_WHEN is a shell
# condition on $status and $output.
expect() {
  local what=$1 good=$2
  shift 3
  output=$("$@" 2>&1)
  status=$?
  if eval "$good"; then
    echo "races: $what: as expected (exit $status)"
  else
    echo "races: $what: FAILED (exit $status)" >&2
    tail -15 <<<"$output" >&2
    failed=1
  fi
}
expect "$shape buggy, seed 1, $fault: found by '$found'" \
  '[ "$status" -ne 0 ] && grep -qF -- "$found" <<<"$output"' -- \
  "$verbfault" run --seed 1 --timeout 30 --fault "$fault" -- "$program" "$shape" buggy
expect "$shape fixed, seed 1, $fault: passes" \
  '[ "$status" -eq 0 ] && grep -q "^think_time_races: 20 rounds$" <<<"$output"' -- \
  "$verbfault" run --seed 1 --timeout 30 --fault "$fault" -- "$program" "$shape" fixed
expect "$shape fixed, seeds 1..20: all pass" \
  '[ "$status" -eq 0 ] && grep -q "20 of 20 seeds run .*, 0 failed" <<<"$output"' -- \
  "$verbfault" sweep --seeds 1..20 --jobs 2 --timeout 30 -- "$program" "$shape" fixed
output=$("$verbfault" sweep --seeds 1..100 --jobs 2 --timeout 30 -- "$program" "$shape" buggy 2>&1)
found=$(sed -nE 's/.*100 of 100 seeds run in .*, ([0-9]+) failed$/\1/p' <<<"$output")
if [ -n "$found" ] && [ "$found" -ge 20 ]; then
  echo "races: $shape buggy, seeds 1..100, no fault: found by $found seeds (at least 20 expected)"
else
  echo "races: $shape buggy, seeds 1..100, no fault: FAILED: found by ${found:-no} seeds, expected at least 20" >&2
  tail -15 <<<"$output" >&2
  failed=1
fi
exit "$failed"
