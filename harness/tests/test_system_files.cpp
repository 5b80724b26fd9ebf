// The simulated devices as the system shows them (interposer/
// system_files.h): programs that look in /dev/infiniband and
// /sys/class/infiniband* instead of asking libibverbs find vfsim0 there as
// they find rxe0 or mlx5_0, and nothing else of the system changes.
#include "findings_file.h"
#include "shell.h"
#include "verbfault/matchers.h"

#include <gmock/gmock.h>

#include <gtest/gtest.h>

#include <cstdio>
#include <string>

namespace {

using verbfault::testing::contains;
using verbfault::testing::ProcessResult;

// Most programs run here are Debian's, not ours: under the sanitized
// build, LeakSanitizer is not theirs to run (libibumad leaks in ibstat;
// scenarios/preload_line.sh says the same). The probe's leaks would be its
// own, not the harness's, so it runs the same way.
ProcessResult run(const std::string& env, const std::string& command) {
  return verbfault::testing::run_preloaded(
      VERBFAULT_LIBRARY, "ASAN_OPTIONS=\"${ASAN_OPTIONS}:detect_leaks=0\" " + env, command);
}

TEST(SystemFiles, TheUverbsNodeIsACharacterDeviceNothingCanOpen) {
  ProcessResult r = run("", SYSTEM_FILES_PROBE);
  ASSERT_EQ(r.status, 0) << r.output;
  // UCX's test: stat says a character device, access allows reading and
  // writing; opening it finds no driver (only libibverbs talks to uverbs).
  EXPECT_TRUE(contains(r.output, "stat /dev/infiniband/uverbs0: chr 231:192\n")) << r.output;
  EXPECT_TRUE(contains(r.output, "access rw /dev/infiniband/uverbs0: 0\n")) << r.output;
  EXPECT_TRUE(contains(r.output, "open /dev/infiniband/uverbs0: -1 No such device or address\n"))
      << r.output;
}

TEST(SystemFiles, TheConnectionManagerNodeOpensAsLibrdmacmExpects) {
  ProcessResult r = run("", SYSTEM_FILES_PROBE);
  ASSERT_EQ(r.status, 0) << r.output;
  // open_cdev's checks, and the kernel's answers: the rdma_cm misc device
  // has no read (EINVAL), and its ABI version is 4.
  EXPECT_TRUE(contains(r.output, "stat /dev/infiniband/rdma_cm: chr 10:250\n")) << r.output;
  EXPECT_TRUE(contains(r.output, "open /dev/infiniband/rdma_cm: ok\n")) << r.output;
  EXPECT_TRUE(contains(r.output, "fstat rdma_cm: chr 10:250\n")) << r.output;
  EXPECT_TRUE(contains(r.output, "read rdma_cm: -1 Invalid argument\n")) << r.output;
  EXPECT_TRUE(contains(r.output, "close rdma_cm: 0\n")) << r.output;
  EXPECT_TRUE(contains(r.output, "rdma_cm abi_version: 4\n")) << r.output;
}

// rping's server, unmodified, gets through librdmacm's start (the event
// channel, an id, the bind and the listen) and waits for a connection.
TEST(SystemFiles, RpingServerListensOnTheSimulatedConnectionManager) {
  ProcessResult r = run("", "timeout 2 stdbuf -oL rping -s -v -d -C 1");
  EXPECT_EQ(r.status, 124) << r.output;  // still waiting for a client
  EXPECT_TRUE(contains(r.output, "rdma_bind_addr successful\nrdma_listen\n")) << r.output;
}

TEST(SystemFiles, AttributesReadAsTheKernelWritesThem) {
  ProcessResult r = run("", SYSTEM_FILES_PROBE);
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "statx state: file mode 444\n")) << r.output;
  EXPECT_TRUE(contains(r.output, "state: 4: ACTIVE\n")) << r.output;
  EXPECT_TRUE(contains(r.output, "link_layer: InfiniBand\n")) << r.output;
  EXPECT_TRUE(contains(r.output, "numa_node: -1\n")) << r.output;
  EXPECT_TRUE(contains(r.output, "gid type 0: IB/RoCE v1\n")) << r.output;
  // An entry that holds no GID has no attributes to read (the kernel: EINVAL).
  EXPECT_TRUE(contains(r.output, "gid type 9: error Invalid argument\n")) << r.output;
  EXPECT_TRUE(contains(r.output, "abi_version: 6\n")) << r.output;
  EXPECT_TRUE(contains(r.output, "uverbs0 ibdev: vfsim0\n")) << r.output;
  EXPECT_TRUE(contains(r.output, "fopen fw_ver: 1.0.0\n")) << r.output;
  EXPECT_TRUE(contains(r.output, "open for writing: -1 Permission denied\n")) << r.output;
  EXPECT_TRUE(contains(r.output, "open missing: -1 No such file or directory\n")) << r.output;
}

TEST(SystemFiles, TheClassDirectoryLinksToTheDeviceAsSysfsDoes) {
  ProcessResult r = run("", SYSTEM_FILES_PROBE);
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "readlink: ../../devices/virtual/infiniband/vfsim0\n"))
      << r.output;
  EXPECT_TRUE(contains(r.output, "realpath: /sys/devices/virtual/infiniband/vfsim0/ports/1/gids\n"))
      << r.output;
  EXPECT_TRUE(contains(r.output, "opendir: .(4) ..(4) vfsim0(10)\n")) << r.output;
  EXPECT_TRUE(contains(r.output, "scandir pkeys: 128 first 0\n")) << r.output;
}

TEST(SystemFiles, AServedDirectoryCanBeTheWorkingDirectory) {
  ProcessResult r = run("", SYSTEM_FILES_PROBE);
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "getcwd: /sys/devices/virtual/infiniband/vfsim0/ports\n"))
      << r.output;
  EXPECT_TRUE(contains(r.output, "relative state: 4: ACTIVE\n")) << r.output;
  EXPECT_TRUE(contains(r.output, "back: /\n")) << r.output;
  EXPECT_TRUE(contains(r.output, "other path: -1\n")) << r.output;
}

TEST(SystemFiles, EachDeviceHasItsOwnUverbsNumber) {
  ProcessResult r = run("VERBFAULT_SIM_DEVICES=2",
                        "sh -c 'ls -l /dev/infiniband; cat "
                        "/sys/class/infiniband_verbs/uverbs1/ibdev "
                        "/sys/class/infiniband_verbs/uverbs1/dev'");
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "crw-rw-rw- 1 root root 231, 192")) << r.output;
  EXPECT_TRUE(contains(r.output, "231, 193")) << r.output;
  EXPECT_TRUE(contains(r.output, "vfsim1\n231:193\n")) << r.output;
}

TEST(SystemFiles, RocePortsReadAsEthernetWithRoceV2Gids) {
  ProcessResult r = run("VERBFAULT_SIM_PROFILE=roce",
                        "sh -c 'p=/sys/class/infiniband/vfsim0/ports/1; cat $p/link_layer "
                        "$p/rate $p/lid $p/gid_attrs/types/0 $p/gid_attrs/types/1 $p/gids/1'");
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_TRUE(contains(r.output,
                       "Ethernet\n100 Gb/sec (4X EDR)\n0x0\nRoCE v2\nRoCE v2\n"
                       "0000:0000:0000:0000:0000:ffff:"))
      << r.output;
}

// The port's network interface, where rdma-core's tests and `rdma link`
// look for it: the bus device's net/ directory, and (RoCE) the netdev of
// each GID; an InfiniBand GID has none (EINVAL, as the kernel).
TEST(SystemFiles, ThePortsInterfaceIsUnderTheBusDevice) {
  ProcessResult roce =
      run("VERBFAULT_SIM_PROFILE=roce",
          "sh -c 'd=/sys/class/infiniband/vfsim0; n=$(ls $d/device/net/); echo $n; "
          "cat $d/device/net/$n/type $d/device/net/$n/ifindex $d/device/net/$n/address "
          "$d/ports/1/gid_attrs/ndevs/1'");
  ASSERT_EQ(roce.status, 0) << roce.output;
  EXPECT_TRUE(contains(roce.output, "vfeth0\n1\n65536\n02:fa:f1:00:00:01\nvfeth0\n"))
      << roce.output;
  ProcessResult ib =
      run("VERBFAULT_SIM_PROFILE=ib",
          "sh -c 'd=/sys/class/infiniband/vfsim0; ls $d/device/net/; cat $d/device/net/vfib0/type; "
          "cat $d/ports/1/gid_attrs/ndevs/0 || echo no netdev'");
  EXPECT_TRUE(contains(ib.output, "vfib0\n32\n")) << ib.output;
  EXPECT_TRUE(contains(ib.output, "Invalid argument\nno netdev")) << ib.output;
}

// ls -la stats "." and "..", asks for ACLs and SELinux labels (getxattr)
// and follows a symlink named with a trailing slash, as path_resolution(7)
// says: every one of them must answer as the kernel would.
TEST(SystemFiles, LsListsTheDirectoriesWithoutAnError) {
  ProcessResult r = run("",
                        "sh -c 'ls -la /dev/infiniband /sys/class/infiniband/ "
                        "/sys/class/infiniband/vfsim0/ && stat -c \"%F %n\" "
                        "/sys/class/infiniband/vfsim0 /sys/class/infiniband/vfsim0/ "
                        "/sys/class/infiniband/vfsim0/../vfsim0/fw_ver'");
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_FALSE(contains(r.output, "ls: ")) << r.output;
  EXPECT_FALSE(contains(r.output, "?")) << r.output;
  EXPECT_TRUE(contains(r.output, "symbolic link /sys/class/infiniband/vfsim0\n")) << r.output;
  EXPECT_TRUE(contains(r.output, "directory /sys/class/infiniband/vfsim0/\n")) << r.output;
  EXPECT_TRUE(contains(r.output, "regular file /sys/class/infiniband/vfsim0/../vfsim0/fw_ver\n"))
      << r.output;
  EXPECT_TRUE(contains(r.output, "board_id\n")) << r.output;
}

TEST(SystemFiles, NoSimulatedDeviceNoFiles) {
  ProcessResult r = run("VERBFAULT_SIM_DEVICES=0", "ls /sys/class/infiniband /dev/infiniband");
  EXPECT_NE(r.status, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "No such file or directory")) << r.output;
}

TEST(SystemFiles, IbstatShowsTheSimulatedDevice) {
  ProcessResult r = run("", IBSTAT);
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "CA 'vfsim0'\n")) << r.output;
  EXPECT_TRUE(contains(r.output, "\tFirmware version: 1.0.0\n")) << r.output;
  EXPECT_TRUE(contains(r.output, "\t\tState: Active\n")) << r.output;
  EXPECT_TRUE(contains(r.output, "\t\tPhysical state: LinkUp\n")) << r.output;
  EXPECT_TRUE(contains(r.output, "\t\tLink layer: InfiniBand\n")) << r.output;
}

TEST(SystemFiles, IbstatusShowsEveryPort) {
  ProcessResult r = run("VERBFAULT_SIM_DEVICES=2", IBSTATUS);
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "Infiniband device 'vfsim0' port 1 status:\n")) << r.output;
  EXPECT_TRUE(contains(r.output, "Infiniband device 'vfsim1' port 1 status:\n")) << r.output;
  EXPECT_TRUE(contains(r.output, "\tstate:\t\t 4: ACTIVE\n")) << r.output;
  EXPECT_TRUE(contains(r.output, "\tlink_layer:\t InfiniBand\n")) << r.output;
}

// libfabric asks for the devices from its constructor, before those of
// libverbfault.so have run: the device profiles must be readable then
// (their name tables were empty, and no device was available).
TEST(SystemFiles, FiInfoFindsTheSimulatedDeviceFromAConstructor) {
  ProcessResult r = run("", std::string(FI_INFO) + " -p verbs");
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "domain: vfsim0\n")) << r.output;
  EXPECT_TRUE(contains(r.output, "domain: vfsim0-dgram\n")) << r.output;
  EXPECT_FALSE(contains(r.output, "verbfault:")) << r.output;
}

// Under `verbfault run` with its defaults: libfabric probes the device's
// limits with QPs on a 1-entry CQ it destroys unused, and librdmacm keeps
// a context and a PD of every device open until exit by design: neither
// is a finding of the application's (issue 32).
TEST(SystemFiles, FiInfoUnderVerbfaultRunHasNoFinding) {
  const std::string findings = verbfault::testing::scratch_findings_path();
  ProcessResult r = verbfault::testing::run_shell(std::string(VERBFAULT_CLI) + " run --findings " +
                                                  findings + " --library " + VERBFAULT_LIBRARY +
                                                  " -- " + FI_INFO + " -p verbs");
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "domain: vfsim0\n")) << r.output;
  EXPECT_THAT(verbfault::testing::take_findings(findings), ::testing::IsEmpty()) << r.output;
}

}  // namespace
