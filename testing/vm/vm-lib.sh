# Sourced by the tests and scripts that run in the VM (testing/vm/vm-run.sh):
# the launcher's path, and what "the VM cannot be had here" means, said the
# same way by each.

# This checkout's launcher.
vm_launcher() {
  echo "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/vm-run.sh"
}

# vm_run NAME LOG VM-RUN-ARGUMENTS...: runs the launcher, its own messages
# and the console into LOG, and returns the guest command's status. When
# the launcher says the machine cannot be had here (a host package or the
# guest kernel missing: its "unavailable:" line), prints "NAME: skipped:
# why" and exits 77, which ctest counts as skipped; any other failure of
# the launcher is the caller's to report (status 125, LOG's last lines).
vm_run() {
  local name=$1 log=$2 status=0 why
  shift 2
  "$(vm_launcher)" "$@" >"$log" 2>&1 || status=$?
  if [ "$status" -eq 125 ]; then
    why=$(sed -n 's/^vm-run.sh: unavailable: //p' "$log" | head -1)
    if [ -n "$why" ]; then
      echo "$name: skipped: the VM cannot be had here: $why"
      exit 77
    fi
    echo "$name: the VM failed: $(grep '^vm-run.sh: error:' "$log" | head -1)"
  fi
  return "$status"
}
