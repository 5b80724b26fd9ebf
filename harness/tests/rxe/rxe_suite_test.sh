#!/usr/bin/env bash
# ctest rxe.suite (label rxe): harness/tests/rxe/inside.sh in a throw-away
# VM with Soft-RoCE (../shared/rxe-vm/rxe-vm.sh, or RXE_VM), on the real
# rxe provider. Exit 77 (ctest: skipped), with one line saying why, when
# qemu, the VM script or the guest kernel is not there; the rest of the
# suite does not depend on it.
#
#   rxe_suite_test.sh --vm RXE_VM_SH --source SOURCE_DIR --build BUILD_DIR
set -uo pipefail
vm="" source="" build=""
while [ $# -gt 0 ]; do
  case "$1" in
    --vm) vm=$2; shift 2 ;;
    --source) source=$2; shift 2 ;;
    --build) build=$2; shift 2 ;;
    *) echo "rxe_suite_test.sh: unknown argument '$1': expected --vm, --source or --build" >&2; exit 2 ;;
  esac
done
vm=${RXE_VM:-$vm}
source "$source/scripts/rxe-vm-lib.sh"
rxe_vm_prerequisites rxe.suite "$vm"
out=$(mktemp -d "${TMPDIR:-/tmp}/rxe-suite.XXXXXX")
trap 'rm -rf "$out"' EXIT
shares=(-s "$source" -s "$out")
case "$build/" in "$source"/*) ;; *) shares+=(-s "$build") ;; esac
libraries=(-L "$build/harness/cli/verbfault" -L "$build/harness/libverbfault.so"
  -L "$build/harness/tests/hang_program" -L "$build/scenarios/sample_rc/sample_rc"
  -L "$build/scenarios/rdma_cm/cm_connect_steps" -L "$build/scenarios/threads/polling_server")
for program in "$build"/scenarios/field_failures/field_failure_F[0-9][0-9]; do
  libraries+=(-L "$program")
done
start=$(date +%s)
status=0
"$vm" -q -t 600 "${shares[@]}" -C "$out" "${libraries[@]}" \
  -c "bash '$source/harness/tests/rxe/inside.sh' '$source' '$build' '$out' > '$out/console.txt' 2>&1; echo \$? > '$out/guest-status'" \
  >"$out/vm.log" 2>&1 || status=$?
cat "$out/console.txt" 2>/dev/null || true
echo "rxe.suite: the VM run took $(($(date +%s) - start)) s"
# The guest's own status, from the shared directory: rxe-vm.sh's exit
# marker on the serial console is sometimes missed
# (reports/provider/tests/provider_report_test.sh).
if [ -s "$out/guest-status" ]; then
  status=$(cat "$out/guest-status")
elif [ "$status" -eq 125 ]; then
  rxe_vm_could_not_run rxe.suite "$out/vm.log"
fi
exit "$status"
