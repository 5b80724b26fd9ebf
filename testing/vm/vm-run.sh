#!/usr/bin/env bash
# vm-run.sh: runs a command as root in a throw-away virtual machine whose
# kernel has a real RDMA provider: Soft-RoCE (rxe) or Soft-iWARP (siw).
#
# The host needs no RDMA in its kernel and nothing installed but Debian
# packages: qemu boots Debian's own kernel (linux-image-amd64, downloaded
# with apt-get and unpacked into the cache, never installed; siw, which
# Debian leaves out, built once from linux-source against the kernel's
# headers, linux-headers-<version>, into the cached tree) from an
# initramfs made of the host's files (a static busybox, dash, iproute2's ip
# and rdma, libibverbs with the provider's library, the tools the command
# needs and their shared libraries). In the guest:
#
#     veth0 10.0.0.1/24  <->  veth1 10.0.0.2/24
#     <p>0 on veth0           <p>1 on veth1        (<p>: rxe or siw)
#
# Directories given with --share are the host's own, read and written in
# place through virtio-9p (a build tree, a results folder). The command's
# exit status comes back through a share of its own, written and synced
# before the guest powers off; the serial console's marker line is the
# second way, for a guest whose share could not be written.
#
# Usage: vm-run.sh [OPTIONS] -- PROGRAM [ARGS...]
#        vm-run.sh [OPTIONS] --script 'shell text'   (run by dash)
#        vm-run.sh [OPTIONS]                          (a smoke test)
#
# Options:
#   --provider rxe|siw   the kernel provider (default rxe)
#   --share DIR          make host directory DIR (absolute after cd)
#                        visible at the same path in the guest; repeatable
#   --libs-of FILE       put FILE's shared libraries (ldd) into the guest;
#                        repeatable (FILE itself is on a share)
#   --cwd DIR            the command's working directory (default /root)
#   --env NAME=VALUE     set for the command; repeatable
#   --timeout SECONDS    the whole run's wall-clock limit (default 600)
#   --memory SIZE        guest memory (default 1G)
#   --cpus N             guest CPUs (default 2)
#   --mtu BYTES          the veths' MTU (default 1500: RoCE MTU 1024)
#   --accel kvm|tcg|auto auto (default): KVM when /dev/kvm can boot the
#                        guest (a short probe boot says), else TCG
#   --cache DIR          kernel cache (default $VERBFAULT_VM_CACHE or
#                        ~/.cache/verbfault-vm); the kernel .deb may also
#                        be named by VERBFAULT_VM_KERNEL_DEB, or found in
#                        apt's cache (/var/cache/apt/archives)
#   --log FILE           keep the guest's console there
#   --quiet              do not copy the console to stdout
#
# The command sees: RDMA_PROVIDER (rxe|siw), RDMA_DEV / RDMA_DEV2 (rxe0,
# rxe1 or siw0, siw1), RDMA_NETDEV / RDMA_NETDEV2 (veth0, veth1), RDMA_IP /
# RDMA_IP2 (10.0.0.1, 10.0.0.2), RDMA_GID_IDX (1 for rxe: the IPv4-mapped
# RoCEv2 GID; 0 for siw), and the same with RXE_ in place of RDMA_.
#
# Exit status: the command's; 124 when the time limit ended the run; 125
# when the machine could not be had, with one line starting "vm-run.sh:
# unavailable:" (a missing host package or kernel: a caller may skip) or
# "vm-run.sh: error:" (anything else).
set -euo pipefail
trap 'echo "vm-run.sh: error: a step of the machine'"'"'s making failed (line $LINENO)" >&2; exit 125' ERR

me=vm-run.sh
unavailable() { echo "$me: unavailable: $*" >&2; exit 125; }
error() { echo "$me: error: $*" >&2; exit 125; }
note() { echo "$me: $*" >&2; }

provider=rxe
timeout_s=600
memory=1G
cpus=2
mtu=1500
accel=auto
guest_cwd=/root
script=""
quiet=0
console_log=""
cache=${VERBFAULT_VM_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/verbfault-vm}
shares=()
libs_of=()
envs=()

need_value() { [ $# -ge 2 ] || error "option $1 needs a value"; }
while [ $# -gt 0 ]; do
  case $1 in
    --provider) need_value "$@"; provider=$2; shift 2 ;;
    --share) need_value "$@"; shares+=("$2"); shift 2 ;;
    --libs-of) need_value "$@"; libs_of+=("$2"); shift 2 ;;
    --cwd) need_value "$@"; guest_cwd=$2; shift 2 ;;
    --env) need_value "$@"; [[ $2 == *=* ]] || error "--env '$2': expected NAME=VALUE"
      envs+=("$2"); shift 2 ;;
    --timeout) need_value "$@"; timeout_s=$2; shift 2 ;;
    --memory) need_value "$@"; memory=$2; shift 2 ;;
    --cpus) need_value "$@"; cpus=$2; shift 2 ;;
    --mtu) need_value "$@"; mtu=$2; shift 2 ;;
    --accel) need_value "$@"; accel=$2; shift 2 ;;
    --cache) need_value "$@"; cache=$2; shift 2 ;;
    --log) need_value "$@"; console_log=$2; shift 2 ;;
    --script) need_value "$@"; script=$2; shift 2 ;;
    --quiet) quiet=1; shift ;;
    --help | -h) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    --) shift; break ;;
    -*) error "unknown option '$1' (see --help)" ;;
    *) break ;;
  esac
done
case $provider in rxe | siw) ;; *) error "--provider '$provider': expected rxe or siw" ;; esac
case $accel in kvm | tcg | auto) ;; *) error "--accel '$accel': expected kvm, tcg or auto" ;; esac
[[ $timeout_s =~ ^[0-9]+$ ]] || error "--timeout '$timeout_s': expected a number of seconds"
[[ $mtu =~ ^[0-9]+$ ]] || error "--mtu '$mtu': expected a number of bytes"
[ -z "$script" ] || [ $# -eq 0 ] || error "give --script or a program, not both"

for tool in qemu-system-x86_64 cpio gzip ldd timeout dpkg-deb; do
  command -v "$tool" >/dev/null || unavailable "no '$tool' on the host (apt-get install qemu-system-x86 cpio)"
done
busybox=$(command -v busybox || true)
[ -n "$busybox" ] && ! ldd "$busybox" >/dev/null 2>&1 ||
  unavailable "no static busybox on the host (apt-get install busybox-static)"
for tool in depmod modprobe; do
  command -v "$tool" >/dev/null || [ -x "/sbin/$tool" ] ||
    unavailable "no '$tool' on the host (apt-get install kmod)"
done
depmod_bin=$(command -v depmod || echo /sbin/depmod)
modprobe_bin=$(command -v modprobe || echo /sbin/modprobe)

mkdir -p "$cache"
cache=$(cd "$cache" && pwd)
scratch=$(mktemp -d "${TMPDIR:-/tmp}/verbfault-vm.XXXXXX")
trap 'rm -rf "$scratch"' EXIT

# ---- the guest kernel ---------------------------------------------------
# One .deb, unpacked once per version into the cache (a lock keeps two runs
# from unpacking it at once). Its modules come without modules.dep, which
# depmod writes.
kernel_deb() {
  local deb=${VERBFAULT_VM_KERNEL_DEB:-} package
  [ -n "$deb" ] && { [ -f "$deb" ] || unavailable "VERBFAULT_VM_KERNEL_DEB=$deb: no such file"; echo "$deb"; return; }
  for deb in "$cache"/linux-image-*-amd64_*_amd64.deb /var/cache/apt/archives/linux-image-*-amd64_*_amd64.deb; do
    [ -f "$deb" ] && [[ $deb != *-dbg_* ]] && { echo "$deb"; return; }
  done
  package=$(apt-cache depends linux-image-amd64 2>/dev/null | sed -n 's/^ *Depends: \(linux-image-[^ ]*\)$/\1/p' | head -1)
  [ -n "$package" ] || unavailable "no guest kernel: apt-cache knows no linux-image-amd64 (apt-get update)"
  (cd "$cache" && apt-get download "$package" >/dev/null 2>&1) ||
    unavailable "no guest kernel: apt-get download $package failed"
  ls "$cache"/"$package"_*.deb | head -1
}
exec 8>"$cache/.lock"
flock 8
deb=$(kernel_deb)
kernel_dir=$cache/$(basename "$deb" .deb)
if [ ! -e "$kernel_dir/.unpacked" ]; then
  note "unpacking $(basename "$deb")"
  rm -rf "$kernel_dir"
  dpkg-deb -x "$deb" "$kernel_dir"
  "$depmod_bin" -b "$kernel_dir" "$(ls "$kernel_dir/lib/modules")"
  touch "$kernel_dir/.unpacked"
fi
kernel_version=$(ls "$kernel_dir/lib/modules")
vmlinuz=$kernel_dir/boot/vmlinuz-$kernel_version
[ -f "$vmlinuz" ] || error "$(basename "$deb") holds no vmlinuz"

# Debian's kernels leave siw out (# CONFIG_RDMA_SIW is not set, in 6.1 and
# in bookworm-backports' 6.12 alike). Its source is in Debian's
# linux-source package and builds against the kernel's headers package in
# seconds: the module is built once, into the unpacked kernel's
# extra/ folder, where modprobe finds it with its dependencies (ib_core,
# libcrc32c). Unsigned, it taints the guest's kernel, which loads it.
build_siw() {
  local modules=$kernel_dir/lib/modules/$kernel_version headers source_deb series work
  [ -e "$modules/extra/siw.ko" ] && return 0
  headers=/usr/src/linux-headers-$kernel_version
  [ -f "$headers/Makefile" ] ||
    unavailable "Debian's kernel $kernel_version has no siw module, and building it needs its headers (apt-get install linux-headers-$kernel_version)"
  series=$(sed -n 's/^\([0-9]*\.[0-9]*\).*/\1/p' <<<"$kernel_version")
  source_deb=$(ls "$cache"/linux-source-"$series"_*_all.deb 2>/dev/null | head -1 || true)
  if [ -z "$source_deb" ]; then
    (cd "$cache" && apt-get download "linux-source-$series" >/dev/null 2>&1) ||
      unavailable "Debian's kernel $kernel_version has no siw module, and apt-get download linux-source-$series failed"
    source_deb=$(ls "$cache"/linux-source-"$series"_*_all.deb | head -1)
  fi
  note "building siw for $kernel_version from $(basename "$source_deb")"
  work=$scratch/siw
  mkdir -p "$work"
  dpkg-deb --fsys-tarfile "$source_deb" | tar -xO "./usr/src/linux-source-$series.tar.xz" | xz -dc |
    tar -x -C "$work" --strip-components=5 "linux-source-$series/drivers/infiniband/sw/siw" ||
    error "no drivers/infiniband/sw/siw in $(basename "$source_deb")"
  make -s -C "$headers" M="$work" CONFIG_RDMA_SIW=m modules >"$work/build.log" 2>&1 ||
    error "siw did not build against $headers: $(tail -3 "$work/build.log" | tr '\n' ' ')"
  mkdir -p "$modules/extra"
  cp "$work/siw.ko" "$modules/extra/siw.ko"
  "$depmod_bin" -b "$kernel_dir" "$kernel_version"
}
[ "$provider" = siw ] && build_siw
flock -u 8

# ---- the initramfs -------------------------------------------------------
root=$scratch/root
mkdir -p "$root"/{usr/bin,usr/lib,usr/lib64,etc,proc,sys,dev,tmp,root,run,var/tmp,result}
# Debian 12's merged /usr, so that a host path is the guest's path too.
for top in bin sbin lib lib64; do ln -s "usr/${top/sbin/bin}" "$root/$top"; done
ln -s bin "$root/usr/sbin"

declare -A placed=()
place() {  # place HOST_FILE [GUEST_PATH]: the file's content, by its name
  local from=$1 to=${2:-$1}
  [ -n "${placed[$to]:-}" ] && return 0
  placed[$to]=1
  mkdir -p "$root$(dirname "$to")"
  cp -L --preserve=mode "$from" "$root$to"
}
place_libraries_of() {  # the shared-library closure ldd resolves
  local library
  while read -r library; do
    [ -e "$library" ] && place "$library"
  done < <(ldd "$1" 2>/dev/null | awk '$2 == "=>" && $3 ~ /^\// {print $3} $1 ~ /^\// {print $1}')
}
place_program() {  # a host program and its libraries, at /usr/bin/NAME
  local path
  path=$(command -v "$1" 2>/dev/null) || return 1
  path=$(readlink -f "$path")
  place "$path" "/usr/bin/$1"
  place_libraries_of "$path"
}

# dash is the guest's sh: Debian's static busybox runs its own applet for
# a name it has (its "ip" cannot make a veth) before anything on PATH.
for program in dash ip rdma ibv_devices ibv_devinfo ibv_rc_pingpong; do
  place_program "$program" || unavailable "no '$program' on the host (apt-get install dash iproute2 ibverbs-utils)"
done
ln -s dash "$root/usr/bin/sh"
for program in bash ibv_uc_pingpong ibv_ud_pingpong ibv_srq_pingpong rping ucmatose udaddy \
  mckey rdma_server rdma_client rstream riostream ib_send_bw ib_write_bw ib_read_bw; do
  place_program "$program" || true
done
multiarch=$(dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null || echo x86_64-linux-gnu)
driver=$(ls "/usr/lib/$multiarch/libibverbs/lib$provider-rdmav"*.so 2>/dev/null | head -1)
[ -n "$driver" ] || unavailable "no lib$provider provider library (apt-get install ibverbs-providers)"
place "$driver"
place "/etc/libibverbs.d/$provider.driver"
# Loaded with dlopen, so no ldd sees them: librdmacm's preload, libgcc_s
# (pthread_exit unwinds through it), the NSS modules for /etc/hosts.
for library in librdmacm.so.1 rsocket/librspreload.so libgcc_s.so.1 libnss_files.so.2; do
  [ -e "/usr/lib/$multiarch/$library" ] && place "/usr/lib/$multiarch/$library" &&
    place_libraries_of "/usr/lib/$multiarch/$library"
done
for file in ${libs_of[@]+"${libs_of[@]}"}; do
  [ -e "$file" ] || error "--libs-of $file: no such file"
  place_libraries_of "$file"
done
# The program, when it is a host file not on a share: copied in.
if [ $# -gt 0 ] && [[ $1 == */* ]] && [ -f "$1" ]; then
  program=$(readlink -f "$1")
  on_share=0
  for share in ${shares[@]+"${shares[@]}"}; do
    [[ $program == "$(readlink -f "$share")"/* ]] && on_share=1
  done
  [ $on_share -eq 1 ] || place "$program"
  place_libraries_of "$program"
  set -- "$program" "${@:2}"
fi
cp "$busybox" "$root/usr/bin/busybox"
for applet in $("$busybox" --list); do
  [ -e "$root/usr/bin/$applet" ] || ln -s busybox "$root/usr/bin/$applet"
done

# Kernel modules and what they need (modprobe --show-depends on the
# unpacked tree), decompressed, in load order. rxe computes its ICRC with
# the crypto API's "crc32", siw its CRC with "crc32c": both are requested
# by name at run time, so no modules.dep line brings them.
case $provider in
  rxe) provider_module=rdma_rxe modules="crc32_generic rdma_rxe" ;;
  siw) provider_module=siw modules="crc32c_generic siw" ;;
esac
modules="$modules ib_uverbs rdma_ucm ib_umad veth virtio_pci 9pnet_virtio 9p"
: >"$root/modules"
for module in $modules; do
  if ! objects=$("$modprobe_bin" -d "$kernel_dir" -S "$kernel_version" --show-depends "$module" 2>/dev/null); then
    [ "$module" = "$provider_module" ] &&
      unavailable "the guest kernel $kernel_version has no $module module ($(grep -h "CONFIG_RDMA_${provider^^}[ =]" "$kernel_dir"/boot/config-* 2>/dev/null || echo "no config"))"
    error "the guest kernel $kernel_version has no $module module"
  fi
  awk '$1 == "insmod" {print $2}' <<<"$objects" | while read -r object; do
      target=${object#"$kernel_dir"}
      target=${target%.xz}
      target=${target%.zst}
      grep -qxF "$target" "$root/modules" && continue
      mkdir -p "$root$(dirname "$target")"
      case $object in
        *.xz) xz -dc "$object" >"$root$target" ;;
        *.zst) zstd -qdc "$object" >"$root$target" ;;
        *) cp "$object" "$root$target" ;;
      esac
      echo "$target" >>"$root/modules"
    done
done

printf 'root:x:0:0:root:/root:/bin/sh\n' >"$root/etc/passwd"
printf 'root:x:0:\n' >"$root/etc/group"
printf '127.0.0.1 localhost\n10.0.0.1 vm-port0\n10.0.0.2 vm-port1\n' >"$root/etc/hosts"
printf 'hosts: files\npasswd: files\ngroup: files\n' >"$root/etc/nsswitch.conf"

# The shares: one 9p tag each, mounted at the host's path. The result
# share, the guest's /result, carries the exit status back.
result=$scratch/result
mkdir -p "$result"
qemu_shares=(-virtfs "local,path=$result,mount_tag=result,security_model=none,id=result")
: >"$root/shares"
index=0
for share in ${shares[@]+"${shares[@]}"}; do
  [ -d "$share" ] || error "--share $share: no such directory"
  share=$(cd "$share" && pwd)
  qemu_shares+=(-virtfs "local,path=$share,mount_tag=share$index,security_model=none,id=share$index")
  echo "share$index $share" >>"$root/shares"
  index=$((index + 1))
done

quote() { printf "'%s'" "${1//\'/\'\\\'\'}"; }
{
  echo "export PATH=/usr/bin HOME=/root"
  for setting in ${envs[@]+"${envs[@]}"}; do echo "export ${setting%%=*}=$(quote "${setting#*=}")"; done
  echo "cd $(quote "$guest_cwd") || exit 126"
  if [ -n "$script" ]; then
    printf '%s\n' "$script"
  elif [ $# -gt 0 ]; then
    printf 'exec'
    for argument in "$@"; do printf ' %s' "$(quote "$argument")"; done
    echo
  else
    # The smoke test: the two devices, and a ping-pong between them (on
    # iWARP through the rdma_cm: its QPs are connected by the CM alone).
    echo 'ibv_devinfo -d "$RDMA_DEV" && ibv_devinfo -d "$RDMA_DEV2" || exit 1'
    if [ "$provider" = rxe ]; then
      echo 'ibv_rc_pingpong -d "$RDMA_DEV" -g "$RDMA_GID_IDX" -n 100 & sleep 1'
      echo 'ibv_rc_pingpong -d "$RDMA_DEV2" -g "$RDMA_GID_IDX" -n 100 127.0.0.1 && wait $!'
    else
      echo 'rping -s -a "$RDMA_IP" -C 10 & sleep 1'
      echo 'rping -c -a "$RDMA_IP" -C 10 -v && wait $!'
    fi
  fi
} >"$root/command"
cp "$(dirname "$0")/guest-init.sh" "$root/init"
chmod 755 "$root/init"
token=$(od -An -N8 -tx1 /dev/urandom | tr -d ' \n')
printf '%s\n%s\n%s\n' "$provider" "$mtu" "$token" >"$root/settings"
initrd=$scratch/initrd.gz
(cd "$root" && find . -print0 | cpio --null -o -H newc --quiet | gzip -1) >"$initrd"

# ---- the run -------------------------------------------------------------
console=$scratch/console.log
boot() {  # boot ACCEL SECONDS [EXTRA_KERNEL_ARGUMENT]: qemu's status
  local cpu=max status=0
  [ "$1" = kvm ] && cpu=host
  local command=(timeout -k 5 "$2" qemu-system-x86_64 -accel "$1" -cpu "$cpu" -m "$memory"
    -smp "$cpus" -kernel "$vmlinuz" -initrd "$initrd" -nodefaults -no-reboot -display none
    -monitor none -serial stdio -device virtio-rng-pci "${qemu_shares[@]}"
    -append "console=ttyS0 rdinit=/init panic=-1 oops=panic loglevel=3 ${3:-}")
  # In a subshell (not replaced by qemu: the exit after it) whose stderr
  # is dropped: qemu may abort as the guest powers off, and the shell's
  # "Aborted" line would say nothing true.
  if [ $quiet -eq 1 ] || [ -n "${3:-}" ]; then
    ("${command[@]}" </dev/null >"$console" 2>&1; exit $?) 2>/dev/null || status=$?
  else
    ("${command[@]}" </dev/null 2>&1 | tee "$console"; exit "${PIPESTATUS[0]}") 2>/dev/null || status=$?
  fi
  return "$status"
}
# KVM only when a probe boot reaches /init: a nested /dev/kvm may fail to
# start a CPU, or (a PVM-backed one) hang the stock kernel at boot.
used=$accel
if [ "$accel" = auto ]; then
  used=tcg
  if [ -r /dev/kvm ] && [ -w /dev/kvm ]; then
    boot kvm "${VERBFAULT_VM_KVM_PROBE_SECONDS:-20}" verbfault_vm_probe || true
    grep -q '^verbfault-vm: init' "$console" && used=kvm
  fi
fi
started=$(date +%s)
status=0
boot "$used" "$timeout_s" || status=$?
[ -z "$console_log" ] || cp "$console" "$console_log"
took=$(($(date +%s) - started))
if [ -s "$result/status" ]; then
  note "$provider guest ($used, ${took} s): exit status $(cat "$result/status")"
  exit "$(cat "$result/status")"
fi
marker=$(tr -d '\r' <"$console" | sed -n "s/^verbfault-vm: exit $token \([0-9]*\)\$/\1/p" | tail -1)
if [ -n "$marker" ]; then
  note "$provider guest ($used, ${took} s): exit status $marker (from the console)"
  exit "$marker"
fi
if [ "$status" -eq 124 ] || [ "$status" -eq 137 ]; then
  note "$provider guest ($used): no end after ${timeout_s} s (--timeout)"
  exit 124
fi
failure=$(tr -d '\r' <"$console" | sed -n 's/^verbfault-vm: setup failed: //p' | head -1)
[ -z "$failure" ] || error "the guest could not set up $provider: $failure"
error "the guest ended without a status (qemu: $status; console: $(tail -c 300 "$console" | tr -d '\r' | tr '\n' ' '))"
