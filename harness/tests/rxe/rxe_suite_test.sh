#!/usr/bin/env bash
# ctest rxe.suite (label rxe): harness/tests/rxe/inside.sh in a throw-away
# VM with Soft-RoCE (testing/vm/vm-run.sh), on the real rxe provider. Exit
# 77 (ctest: skipped), with one line saying why, when the VM cannot be had
# here (qemu or the guest kernel missing); the rest of the suite does not
# depend on it.
#
#   rxe_suite_test.sh --source SOURCE_DIR --build BUILD_DIR
set -uo pipefail
source="" build=""
while [ $# -gt 0 ]; do
  case "$1" in
    --source) source=$2; shift 2 ;;
    --build) build=$2; shift 2 ;;
    *) echo "rxe_suite_test.sh: unknown argument '$1': expected --source or --build" >&2; exit 2 ;;
  esac
done
source "$source/testing/vm/vm-lib.sh"
out=$(mktemp -d "${TMPDIR:-/tmp}/rxe-suite.XXXXXX")
trap 'rm -rf "$out"' EXIT
shares=(--share "$source" --share "$out")
case "$build/" in "$source"/*) ;; *) shares+=(--share "$build") ;; esac
libraries=()
for program in "$build/harness/cli/verbfault" "$build/harness/libverbfault.so" \
  "$build/harness/tests/hang_program" "$build/scenarios/sample_rc/sample_rc" \
  "$build/scenarios/rdma_cm/cm_connect_steps" "$build/scenarios/threads/polling_server" \
  "$build"/scenarios/field_failures/field_failure_F[0-9][0-9]; do
  libraries+=(--libs-of "$program")
done
start=$(date +%s)
status=0
vm_run rxe.suite "$out/vm.log" --provider rxe --quiet --timeout 600 "${shares[@]}" --cwd "$out" \
  "${libraries[@]}" \
  --script "bash '$source/harness/tests/rxe/inside.sh' '$source' '$build' '$out' >'$out/suite.txt' 2>&1" \
  || status=$?
cat "$out/suite.txt" 2>/dev/null || cat "$out/vm.log"
echo "rxe.suite: the VM run took $(($(date +%s) - start)) s"
exit "$status"
