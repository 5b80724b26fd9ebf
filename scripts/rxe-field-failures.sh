#!/usr/bin/env bash
# scripts/field-failures-table.sh on the REAL rxe provider: inside a
# throw-away VM with Soft-RoCE (RXE_VM: the path of rxe-vm.sh, by default
# ../shared/rxe-vm/rxe-vm.sh next to this checkout; it needs
# qemu-system-x86, cpio, busybox-static, linux-image-amd64), rxe0 only (no
# simulated device). Prints the table; its exit status is the table's.
# Build first (scripts/build.sh).
#
#   scripts/rxe-field-failures.sh [BUILD_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
build="${1:-build}"
rxe_vm="${RXE_VM:-../shared/rxe-vm/rxe-vm.sh}"
libraries=(-L "$build/harness/cli/verbfault" -L "$build/harness/libverbfault.so")
for program in "$build"/scenarios/field_failures/field_failure_F[0-9][0-9]; do
  libraries+=(-L "$program")
done
exec "$rxe_vm" -q -t 900 -s "$PWD" -C "$PWD" "${libraries[@]}" \
  -e VERBFAULT_SIM_DEVICES=0 -e HANG_AFTER="${HANG_AFTER:-2}" -e SEEDS_MAX="${SEEDS_MAX:-1000}" \
  -c "bash scripts/field-failures-table.sh $build"
