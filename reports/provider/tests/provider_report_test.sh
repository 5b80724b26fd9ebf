#!/usr/bin/env bash
# One provider-report test: runs `verbfault provider-report` on a device,
# validates the JSON it writes against the schema and holds every check
# against the committed report (verdict and value; verbfault names each
# check that changed and the command that regenerates the file).
#
#   provider_report_test.sh --device NAME --verbfault BIN --baseline FILE
#                           --schema FILE --python PY [--vm RXE_VM --source DIR]
#
# With --vm the run happens inside a throw-away VM with Soft-RoCE
# (rxe-vm.sh; RXE_VM in the environment overrides the path), the build and
# source trees shared into it. Exit 77 (ctest: skipped), with one line
# saying why, when the VM cannot be had: no qemu-system-x86_64, no
# rxe-vm.sh, no guest kernel, or a VM that does not boot.
set -euo pipefail
device="" verbfault="" baseline="" schema="" python="/usr/bin/python3" vm="" source=""
while [ $# -gt 0 ]; do
  case "$1" in
    --device) device=$2 ;;
    --verbfault) verbfault=$2 ;;
    --baseline) baseline=$2 ;;
    --schema) schema=$2 ;;
    --python) python=$2 ;;
    --vm) vm=${RXE_VM:-$2} ;;
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
  # qemu, the VM script, the guest kernel: rxe-vm.sh's cache,
  # RXE_VM_KERNEL_DEB, or the .deb of linux-image-amd64 in apt's cache.
  source "$source/scripts/rxe-vm-lib.sh"
  rxe_vm_prerequisites "provider_report.$device" "$vm"
  build=$(cd "$(dirname "$verbfault")/../.." && pwd)
  probe="$build/reports/provider/verbfault-provider-probe"
  start=$(date +%s)
  shares=(-s "$source" -s "$out")
  case "$build/" in "$source"/*) ;; *) shares+=(-s "$build") ;; esac
  "$vm" -q -t 480 "${shares[@]}" -C "$build" \
    -L "$verbfault" -L "$build/harness/libverbfault.so" -L "$probe" \
    -c "'$verbfault' provider-report --device '$device' --report '$out' --baseline '$baseline' > '$out/console.txt' 2>&1; echo \$? > '$out/guest-status'" \
    > "$out/vm.log" 2>&1 || status=$?
  cat "$out/console.txt" 2>/dev/null || true
  echo "provider_report.$device: the VM run took $(( $(date +%s) - start )) s"
  # The command's status as the guest wrote it into the shared directory:
  # rxe-vm.sh reads its exit marker from the serial console, whose line
  # sometimes arrives behind NUL bytes and is missed (then 125 "without
  # exit marker" although the command ran to its end).
  if [ -s "$out/guest-status" ]; then
    guest=$(cat "$out/guest-status")
    [ "$status" -eq "$guest" ] ||
      echo "provider_report.$device: rxe-vm.sh said $status, the guest's command exited $guest"
    status=$guest
  fi
  # 125 is rxe-vm.sh's infrastructure failure; only a missing host
  # package or guest kernel, or a VM that never booted, is a skip.
  if [ "$status" -eq 125 ] && [ ! -s "$out/console.txt" ]; then
    rxe_vm_could_not_run "provider_report.$device" "$out/vm.log"
  fi
fi
json="$out/provider-$device.json"
[ -f "$json" ] || { echo "provider_report.$device: no report written (exit status $status)"; exit 1; }
"$python" "$here/validate_report.py" "$schema" "$json"
exit "$status"
