#!/usr/bin/env bash
# One provider-report test: runs `verbfault provider-report` on a device,
# validates the JSON it writes against the schema and holds every check
# against the committed report (verdict and value; verbfault names each
# check that changed and the command that regenerates the file).
#
#   provider_report_test.sh --device NAME --verbfault BIN --baseline FILE
#                           --schema FILE --python PY [--vm PROVIDER --source DIR]
#
# With --vm the run happens inside a throw-away VM with that kernel
# provider (rxe or siw: testing/vm/vm-run.sh), the build and source trees
# shared into it. Exit 77 (ctest: skipped), with one line saying why, when
# the VM cannot be had here (qemu or the guest kernel missing).
set -euo pipefail
device="" verbfault="" baseline="" schema="" python="/usr/bin/python3" vm="" source=""
while [ $# -gt 0 ]; do
  case "$1" in
    --device) device=$2 ;;
    --verbfault) verbfault=$2 ;;
    --baseline) baseline=$2 ;;
    --schema) schema=$2 ;;
    --python) python=$2 ;;
    --vm) vm=$2 ;;
    --source) source=$2 ;;
    *) echo "provider_report_test.sh: unknown argument $1" >&2; exit 2 ;;
  esac
  shift 2
done
here=$(cd "$(dirname "$0")" && pwd)
out=$(mktemp -d "${TMPDIR:-/tmp}/provider-report.XXXXXX")
trap 'rm -rf "$out"' EXIT


status=0
if [ -z "$vm" ]; then
  "$verbfault" provider-report --device "$device" --report "$out" --baseline "$baseline" || status=$?
else
  source "$source/testing/vm/vm-lib.sh"
  build=$(cd "$(dirname "$verbfault")/../.." && pwd)
  probe="$build/reports/provider/verbfault-provider-probe"
  start=$(date +%s)
  shares=(--share "$source" --share "$out")
  case "$build/" in "$source"/*) ;; *) shares+=(--share "$build") ;; esac
  vm_run "provider_report.$device" "$out/vm.log" --provider "$vm" --quiet --timeout 480 \
    "${shares[@]}" --cwd "$build" \
    --libs-of "$verbfault" --libs-of "$build/harness/libverbfault.so" --libs-of "$probe" \
    --script "'$verbfault' provider-report --device '$device' --report '$out' --baseline '$baseline' > '$out/console.txt' 2>&1" \
    || status=$?
  cat "$out/console.txt" 2>/dev/null || cat "$out/vm.log"
  echo "provider_report.$device: the VM run took $(( $(date +%s) - start )) s"
fi
json="$out/provider-$device.json"
[ -f "$json" ] || { echo "provider_report.$device: no report written (exit status $status)"; exit 1; }
"$python" "$here/validate_report.py" "$schema" "$json"
exit "$status"
