#!/usr/bin/env bash
# scripts/field-failures-table.sh on the REAL rxe provider: inside a
# throw-away VM with Soft-RoCE (testing/vm/vm-run.sh; its packages come
# from scripts/install-deps.sh, Debian's kernel is downloaded on first
# use), rxe0 only (no simulated device). Prints the table; its exit status is the table's.
# PROVIDER=siw runs them on Soft-iWARP's siw0 instead (their QP pairs
# connect through the rdma_cm there: loopback_pair.h).
# Build first (scripts/build.sh).
#
#   [PROVIDER=rxe|siw] scripts/rxe-field-failures.sh [BUILD_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
build="${1:-build}"
libraries=(--libs-of "$build/harness/cli/verbfault" --libs-of "$build/harness/libverbfault.so")
for program in "$build"/scenarios/field_failures/field_failure_F[0-9][0-9]; do
  libraries+=(--libs-of "$program")
done
exec testing/vm/vm-run.sh --provider "${PROVIDER:-rxe}" --timeout 900 --share "$PWD" --cwd "$PWD" "${libraries[@]}" \
  --env VERBFAULT_SIM_DEVICES=0 --env HANG_AFTER="${HANG_AFTER:-2}" --env SEEDS_MAX="${SEEDS_MAX:-1000}" \
  -- bash scripts/field-failures-table.sh "$build"
