#!/bin/sh
# The guest's /init (PID 1), put there by vm-run.sh: loads the provider,
# makes its two devices on a veth pair, mounts the shares, runs /command,
# and gives its exit status back before powering off. /settings holds the
# provider (rxe or siw), the MTU and the run's token, a line each.
export PATH=/usr/bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
mkdir -p /dev/pts /dev/shm
mount -t devpts devpts /dev/pts
mount -t tmpfs tmpfs /dev/shm
chmod 1777 /tmp /var/tmp
echo "verbfault-vm: init, kernel $(uname -r)"
off() {
  sync
  poweroff -f
  sleep 5
  echo o >/proc/sysrq-trigger
}
grep -qw verbfault_vm_probe /proc/cmdline && off
{
  read -r provider
  read -r mtu
  read -r token
} </settings
failed() {
  echo "verbfault-vm: setup failed: $*"
  dmesg | tail -15
  off
}
while read -r module; do
  insmod "$module" || failed "insmod $module"
done </modules
ulimit -l unlimited
ip link set lo up
ip link add veth0 type veth peer name veth1 || failed "no veth pair"
ip link set veth0 mtu "$mtu" && ip link set veth1 mtu "$mtu" || failed "MTU $mtu"
ip addr add 10.0.0.1/24 dev veth0
ip addr add 10.0.0.2/24 dev veth1
ip link set veth0 up
ip link set veth1 up
# Both addresses are this one namespace's (the 6.1 kernel's rxe and siw
# work in the initial namespace only), so the kernel would carry traffic
# between them over lo, where no RDMA device is: rules of their own send it
# out of one veth and in at the other, and the receiving side accepts a
# packet whose source address is local too.
for interface in all default veth0 veth1; do
  echo 1 >/proc/sys/net/ipv4/conf/$interface/accept_local
  echo 0 >/proc/sys/net/ipv4/conf/$interface/rp_filter
done
ip rule add pref 10 iif lo from 10.0.0.1 to 10.0.0.2 table 10 &&
  ip rule add pref 11 iif lo from 10.0.0.2 to 10.0.0.1 table 11 &&
  ip rule add pref 100 table local &&
  ip rule del pref 0 &&
  ip route add 10.0.0.2 dev veth0 src 10.0.0.1 table 10 &&
  ip route add 10.0.0.1 dev veth1 src 10.0.0.2 table 11 || failed "routing over the veth pair"
rdma link add "${provider}0" type "$provider" netdev veth0 || failed "rdma link add ${provider}0"
rdma link add "${provider}1" type "$provider" netdev veth1 || failed "rdma link add ${provider}1"
gid_index=0
if [ "$provider" = rxe ]; then
  # RoCEv2's IPv4-mapped GID (index 1) appears once the address is seen.
  gid_index=1
  tries=0
  until grep -q ffff:0a00:0001 /sys/class/infiniband/rxe0/ports/1/gids/1 2>/dev/null &&
    grep -q ffff:0a00:0002 /sys/class/infiniband/rxe1/ports/1/gids/1 2>/dev/null; do
    tries=$((tries + 1))
    [ $tries -lt 100 ] || failed "no IPv4 GID on rxe0 and rxe1"
    sleep 0.1
  done
fi
mkdir -p /result
mount -t 9p -o trans=virtio,version=9p2000.L,cache=none result /result || failed "mount of the result share"
while read -r tag path; do
  mkdir -p "$path"
  mount -t 9p -o trans=virtio,version=9p2000.L,msize=512000,cache=none "$tag" "$path" ||
    failed "mount of $path"
done </shares
for name in RDMA RXE; do
  export ${name}_PROVIDER="$provider" ${name}_DEV="${provider}0" ${name}_DEV2="${provider}1"
  export ${name}_NETDEV=veth0 ${name}_NETDEV2=veth1 ${name}_IP=10.0.0.1 ${name}_IP2=10.0.0.2
  export ${name}_GID_IDX=$gid_index
done
echo "verbfault-vm: $provider ready: $(rdma link show | tr '\n' ' ')"
/bin/sh /command </dev/null
status=$?
echo "$status" >/result/status.tmp && mv /result/status.tmp /result/status
sync
echo "verbfault-vm: exit $token $status"
off
