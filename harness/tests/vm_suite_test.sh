#!/usr/bin/env bash
# ctests rxe.suite and siw.suite (label rxe): harness/tests/PROVIDER/inside.sh
# in a throw-away VM with Soft-RoCE or Soft-iWARP (testing/vm/vm-run.sh),
# on the real provider. Exit 77 (ctest: skipped), with one line saying why,
# when the VM cannot be had here (qemu, the guest kernel or, for siw, the
# kernel's headers missing); the rest of the suite does not depend on it.
#
#   vm_suite_test.sh --source SOURCE_DIR --build BUILD_DIR [--provider rxe|siw]
set -uo pipefail
source="" build="" provider=rxe
while [ $# -gt 0 ]; do
  case "$1" in
    --source) source=$2; shift 2 ;;
    --build) build=$2; shift 2 ;;
    --provider) provider=$2; shift 2 ;;
    *) echo "vm_suite_test.sh: unknown argument '$1': expected --source, --build or --provider" >&2; exit 2 ;;
  esac
done
case $provider in rxe | siw) ;; *) echo "vm_suite_test.sh: --provider '$provider': expected rxe or siw" >&2; exit 2 ;; esac
source "$source/testing/vm/vm-lib.sh"
out=$(mktemp -d "${TMPDIR:-/tmp}/$provider-suite.XXXXXX")
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
vm_run "$provider.suite" "$out/vm.log" --provider "$provider" --quiet --timeout 600 "${shares[@]}" \
  --cwd "$out" "${libraries[@]}" \
  --script "bash '$source/harness/tests/$provider/inside.sh' '$source' '$build' '$out' >'$out/suite.txt' 2>&1" \
  || status=$?
cat "$out/suite.txt" 2>/dev/null || cat "$out/vm.log"
echo "$provider.suite: the VM run took $(($(date +%s) - start)) s"
exit "$status"
