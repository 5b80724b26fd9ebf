// The simulated ports' IP interfaces (interposer/network_interfaces.h) and
// the sockets on their addresses (interposer/socket_addresses.h), as a
// program that lists interfaces and exchanges addresses over TCP sees them.
#include "shell.h"

#include <gtest/gtest.h>

#include <string>

namespace {

using verbfault::testing::contains;
using verbfault::testing::ProcessResult;

ProcessResult probe(const std::string& env, const std::string& arguments = "") {
  return verbfault::testing::run_preloaded(VERBFAULT_LIBRARY,
                                           "ASAN_OPTIONS=\"${ASAN_OPTIONS}:detect_leaks=0\" " + env,
                                           std::string(NETWORK_INTERFACES_PROBE) + " " + arguments);
}

TEST(NetworkInterfaces, AnInfinibandPortHasAnIpoibInterfaceBesideTheHostsOwn) {
  ProcessResult r = probe("");
  ASSERT_EQ(r.status, 0) << r.output;
  // As the kernel reports an interface: its link (ARPHRD_INFINIBAND, 20
  // bytes) and its IPv4 address, up and running while the port is ACTIVE.
  EXPECT_TRUE(contains(r.output,
                       "ifaddr vfib0: hatype 32 len 20 ifindex 65536 netmask none "
                       "broadcast hatype 32 len 20 ifindex 65536 flags up=1 running=1"))
      << r.output;
  EXPECT_TRUE(contains(r.output,
                       "ifaddr vfib0: 198.18.0.1 netmask 255.255.0.0 broadcast "
                       "198.18.255.255 flags up=1 running=1 loopback=0\n"))
      << r.output;
  EXPECT_TRUE(contains(r.output, "host's lo listed: 1\n")) << r.output;
  EXPECT_TRUE(contains(r.output, "SIOCGIFFLAGS vfib0: 0 up=1\n")) << r.output;
  EXPECT_TRUE(contains(r.output, "SIOCGIFADDR vfib0: 0 198.18.0.1\n")) << r.output;
  EXPECT_TRUE(contains(r.output, "SIOCGIFMTU vfib0: 0 2044\n")) << r.output;
  EXPECT_TRUE(contains(r.output, "SIOCGIFINDEX vfib0: 0 same as if_nametoindex: 1\n")) << r.output;
  EXPECT_TRUE(contains(r.output, "if_indextoname: vfib0\n")) << r.output;
  // Its settings are the device's, not the program's.
  EXPECT_TRUE(contains(r.output, "SIOCSIFMTU vfib0: -1 Operation not permitted\n")) << r.output;
  EXPECT_TRUE(contains(r.output, "SIOCGIFFLAGS vfnone9: -1 No such device\n")) << r.output;
}

TEST(NetworkInterfaces, ARocePortHasAnEthernetInterface) {
  ProcessResult r = probe("VERBFAULT_SIM_PROFILE=roce", "vfeth0 198.18.0.1 198.18.1.1");
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "ifaddr vfeth0: hatype 1 len 6 ifindex 65536")) << r.output;
  EXPECT_TRUE(contains(r.output, "ifaddr vfeth0: 198.18.0.1 netmask 255.255.0.0")) << r.output;
  EXPECT_TRUE(contains(r.output, "SIOCGIFMTU vfeth0: 0 1500\n")) << r.output;
  EXPECT_FALSE(contains(r.output, "ifaddr vfib")) << r.output;
}

TEST(NetworkInterfaces, EveryDeviceHasItsInterfaceAndAMemberItsAddresses) {
  ProcessResult r =
      probe("VERBFAULT_SIM_DEVICES=2 VERBFAULT_PROC=3", "vfib1 198.18.3.2 198.18.0.1");
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "ifaddr vfib0: 198.18.3.1 netmask")) << r.output;
  EXPECT_TRUE(contains(r.output, "ifaddr vfib1: 198.18.3.2 netmask")) << r.output;
  EXPECT_TRUE(contains(r.output, "SIOCGIFADDR vfib1: 0 198.18.3.2\n")) << r.output;
}

// The port's address carries TCP, as an IPoIB interface does: bound,
// connected to and accepted from under its own address. Another process's
// port address is this machine's too; one of a device nobody has is not.
TEST(NetworkInterfaces, APortAddressCarriesTcp) {
  ProcessResult other = probe("", "vfib0 198.18.0.1 198.18.0.9");
  EXPECT_TRUE(contains(other.output, "bind 198.18.0.9: -1 Cannot assign requested address\n"))
      << other.output;
  ProcessResult r = probe("");
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "bind 198.18.0.1: 0 \n")) << r.output;
  EXPECT_TRUE(contains(r.output, "getsockname: 198.18.0.1\n")) << r.output;
  EXPECT_TRUE(contains(r.output, "connect: 0 \naccept: ok\n")) << r.output;
  EXPECT_TRUE(contains(r.output, "client's peer: 198.18.0.1\n")) << r.output;
  EXPECT_TRUE(contains(r.output, "sent 6, received 6\n")) << r.output;
  EXPECT_TRUE(contains(r.output, "bind 198.18.1.1: 0 \n")) << r.output;
}

// Without simulated devices nothing is added and 198.18/16 is the host's.
TEST(NetworkInterfaces, NoSimulatedDeviceNoInterface) {
  ProcessResult r = probe("VERBFAULT_SIM_DEVICES=0");
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_FALSE(contains(r.output, "ifaddr vf")) << r.output;
  EXPECT_TRUE(contains(r.output, "SIOCGIFADDR vfib0: -1")) << r.output;
  EXPECT_TRUE(contains(r.output, "bind 198.18.0.1: -1 Cannot assign requested address\n"))
      << r.output;
}

// rtnetlink (interposer/route_netlink.h): iproute2 finds the interface by
// name and lists its link and address (what rdma-core's tests read with
// `ip -j addr show`), a dump of every address has it after the host's
// own, and a name nobody has is still the kernel's error.
TEST(NetworkInterfaces, IpShowsTheInterfaceOverRtnetlink) {
  ProcessResult one = verbfault::testing::run_preloaded(
      VERBFAULT_LIBRARY, "ASAN_OPTIONS=\"${ASAN_OPTIONS}:detect_leaks=0\" VERBFAULT_SIM_PROFILE=roce",
      "ip -j addr show vfeth0");
  ASSERT_EQ(one.status, 0) << one.output;
  EXPECT_TRUE(contains(one.output, "\"ifindex\":65536,\"ifname\":\"vfeth0\"")) << one.output;
  EXPECT_TRUE(contains(one.output, "\"address\":\"02:fa:f1:00:00:01\"")) << one.output;
  EXPECT_TRUE(contains(one.output, "\"local\":\"198.18.0.1\",\"prefixlen\":16")) << one.output;
  ProcessResult all = verbfault::testing::run_preloaded(
      VERBFAULT_LIBRARY, "ASAN_OPTIONS=\"${ASAN_OPTIONS}:detect_leaks=0\" VERBFAULT_SIM_PROFILE=ib",
      "sh -c 'ip -o addr; ip -o link; ip link show vfnone'");
  EXPECT_TRUE(contains(all.output, "1: lo    inet 127.0.0.1/8")) << all.output;
  EXPECT_TRUE(contains(all.output, "65536: vfib0    inet 198.18.0.1/16 brd 198.18.255.255"))
      << all.output;
  EXPECT_TRUE(contains(all.output, "65536: vfib0: <BROADCAST,MULTICAST,UP,LOWER_UP> mtu 2044"))
      << all.output;
  EXPECT_TRUE(contains(all.output, "link/infiniband 00:00:00:48:fe:80:")) << all.output;
  EXPECT_TRUE(contains(all.output, "Device \"vfnone\" does not exist.")) << all.output;
}

}  // namespace
