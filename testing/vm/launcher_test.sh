#!/usr/bin/env bash
# ctest vm.launcher: what testing/vm/vm-run.sh promises its callers, in one
# boot: the guest's command sees a shared host directory at the host's path
# and writes into it, the provider's two devices are there, and its exit
# status (7 here, not 0 or 1) comes back as the launcher's; a bad option is
# one line and 125 before any boot. Skipped (77) when the VM cannot be had.
#
# With the argument siw: the smoke test on Soft-iWARP instead (siw0 and
# siw1, the module built from Debian's source; rping between them through
# the rdma_cm), ctest vm.siw.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/vm-lib.sh"
failed=0
fail() { echo "vm.launcher: FAILED: $*"; failed=1; }

if [ "${1:-}" = siw ]; then
  log=$(mktemp "${TMPDIR:-/tmp}/vm-siw.XXXXXX")
  trap 'rm -f "$log"' EXIT
  status=0
  vm_run vm.siw "$log" --provider siw --timeout 300 || status=$?
  grep -q "^hca_id:.siw0" "$log" && grep -q "^hca_id:.siw1" "$log" || fail "siw0 and siw1 were not listed"
  [ "$(grep -c "^ping data: rdma-ping-" "$log")" -eq 10 ] || fail "rping did not echo its 10 pings"
  [ "$status" -eq 0 ] || fail "the smoke test on siw ended with $status"
  [ $failed -eq 0 ] && echo "vm.siw: siw0 and siw1 up, rping between them through the rdma_cm" ||
    tail -30 "$log"
  exit $failed
fi

output=$("$here/vm-run.sh" --provider ipoib 2>&1)
status=$?
[ "$status" -eq 125 ] && [ "$(wc -l <<<"$output")" -eq 1 ] &&
  grep -q "^vm-run.sh: error: --provider 'ipoib': expected rxe or siw$" <<<"$output" ||
  fail "a bad --provider: exit $status, '$output'"

shared=$(mktemp -d "${TMPDIR:-/tmp}/vm-launcher.XXXXXX")
trap 'rm -rf "$shared"' EXIT
status=0
vm_run vm.launcher "$shared/vm.log" --quiet --timeout 300 --share "$shared" --cwd "$shared" \
  --env GREETING="it's shared" \
  --script 'printf "%s\n" "$GREETING" > written; ls /sys/class/infiniband > devices; exit 7' ||
  status=$?
[ "$status" -eq 7 ] || fail "the guest's exit status 7 came back as $status ($(tail -3 "$shared/vm.log"))"
[ "$(cat "$shared/written" 2>/dev/null)" = "it's shared" ] ||
  fail "the guest's file in the shared directory: '$(cat "$shared/written" 2>/dev/null)'"
[ "$(tr '\n' ' ' <"$shared/devices" 2>/dev/null)" = "rxe0 rxe1 " ] ||
  fail "the guest's devices: '$(cat "$shared/devices" 2>/dev/null)'"
[ $failed -eq 0 ] && echo "vm.launcher: status, share, environment and devices as promised"
exit $failed
