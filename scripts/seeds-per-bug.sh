#!/usr/bin/env bash
# Seeds a sweep needs to find each field failure's bug (scenarios/
# field_failures/FNN), with the scenario's own plan and with swarm mode
# (the default palette), and whether swarm mode ever fails the fixed
# program. Prints a Markdown table. Usage: scripts/seeds-per-bug.sh [N]
# (seeds 1..N, default 200), after scripts/build.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
build="${BUILD_DIR:-build}"
verbfault="$build/harness/cli/verbfault"
programs="$build/scenarios/field_failures"
last="${1:-200}"

# The first failing seed of a sweep, or "none in 1..N".
first_failure() {
  local output
  output=$("$verbfault" sweep --seeds "1..$last" --jobs 2 --max-failures 1 "$@" 2>&1 || true)
  local seed
  seed=$(grep -o '^verbfault: seed [0-9]* failed' <<<"$output" | awk '{print $3}' | sort -n | head -1)
  echo "${seed:-none in 1..$last}"
}

echo "| id | with its plan | with --swarm | fixed under --swarm (failed seeds of 1..$last) |"
echo "| --- | --- | --- | --- |"
for dir in scenarios/field_failures/F[0-9][0-9]_*; do
  id=$(basename "$dir"); id=${id%%_*}  # F01_flush_lost: F01
  program="$programs/field_failure_$id"
  # A clean reported failure (exit 1) passes under swarm, unless exit 1 is
  # how this buggy program shows its bug.
  pass="0,1"
  grep -q 'status: \[[^]]*\b1\b' "$dir/expect.yaml" && pass="0"
  with_plan=$(first_failure --plan "$dir/plan.yaml" -- "$program" buggy)
  with_swarm=$(first_failure --swarm --pass-status "$pass" -- "$program" buggy)
  fixed=$("$verbfault" sweep --seeds "1..$last" --jobs 2 --swarm --pass-status "$pass" -- \
    "$program" fixed 2>&1 | grep -c '^verbfault: seed [0-9]* failed' || true)
  echo "| $id | $with_plan | $with_swarm | $fixed |"
done
