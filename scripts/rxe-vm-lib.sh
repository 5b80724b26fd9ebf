# Sourced by the ctests that boot the rxe VM (../shared/rxe-vm/rxe-vm.sh):
# what "the VM cannot be had here" means, said the same way by each.

# rxe_vm_prerequisites NAME VM: exits 77 (ctest: skipped) with one line
# "NAME: skipped: why" when qemu, the VM script or the guest kernel is not
# there; exports RXE_VM_KERNEL_DEB when the kernel is the .deb in apt's
# cache (apt-get install --download-only linux-image-amd64).
rxe_vm_prerequisites() {
  local name=$1 vm=$2 work deb
  rxe_vm_skip() { echo "$name: skipped: $*"; exit 77; }
  command -v qemu-system-x86_64 >/dev/null ||
    rxe_vm_skip "qemu-system-x86_64 is not installed (apt-get install qemu-system-x86)"
  [ -x "$vm" ] || rxe_vm_skip "no rxe-vm.sh at $vm (set RXE_VM)"
  work=${RXE_VM_DIR:-/tmp/rxe-vm}
  if [ -z "${RXE_VM_KERNEL_DEB:-}" ] && ! ls "$work"/linux-image-*-amd64_*_amd64.deb >/dev/null 2>&1; then
    deb=$(ls -1 /var/cache/apt/archives/linux-image-*-amd64_*_amd64.deb 2>/dev/null | grep -v -- -dbg | sort -V | tail -1 || true)
    [ -n "$deb" ] || rxe_vm_skip "no guest kernel (apt-get install --download-only linux-image-amd64, or RXE_VM_KERNEL_DEB)"
    export RXE_VM_KERNEL_DEB=$deb
  fi
}

# rxe_vm_could_not_run NAME VM_LOG: after rxe-vm.sh's 125 (its
# infrastructure failure) with nothing from the guest: a missing host
# package or guest kernel, or a VM that never booted, is a skip (77);
# anything else a failure, with the log's tail.
rxe_vm_could_not_run() {
  local name=$1 log=$2 why
  why=$(grep -m1 -E 'missing host tool|need a static busybox|need modprobe|cannot resolve linux-image|apt-get download|without exit marker' "$log" || true)
  if [ -n "$why" ]; then
    echo "$name: skipped: the VM could not be had: $why"
    exit 77
  fi
  echo "$name: rxe-vm.sh failed: $(tail -3 "$log")"
  exit 1
}
