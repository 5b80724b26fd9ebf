// Unmodified binaries (Debian's ibv_devices and ibv_devinfo, and the bundled
// sample program, all linked against libibverbs only) run with
// LD_PRELOAD=libverbfault.so and see the simulated devices.
#include "shell.h"

#include <gtest/gtest.h>

#include <string>

namespace {

using verbfault::testing::contains;
using verbfault::testing::ProcessResult;

ProcessResult run(const std::string& env, const std::string& command) {
  return verbfault::testing::run_preloaded(VERBFAULT_LIBRARY, env, command);
}

TEST(UnmodifiedBinaries, IbvDevicesListsTheSimulatedDevice) {
  ProcessResult r = run("", IBV_DEVICES);
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "vfsim0")) << r.output;
  EXPECT_FALSE(contains(r.output, "vfsim1")) << "one device by default\n" << r.output;
}

TEST(UnmodifiedBinaries, IbvDevicesHonoursVERBFAULT_SIM_DEVICES) {
  ProcessResult r = run("VERBFAULT_SIM_DEVICES=3", IBV_DEVICES);
  EXPECT_EQ(r.status, 0) << r.output;
  for (const char* name : {"vfsim0", "vfsim1", "vfsim2"})
    EXPECT_TRUE(contains(r.output, name)) << name << "\n" << r.output;
  EXPECT_FALSE(contains(r.output, "vfsim3")) << r.output;
}

TEST(UnmodifiedBinaries, InvalidDeviceCountIsReportedInOneLine) {
  ProcessResult r = run("VERBFAULT_SIM_DEVICES=lots", IBV_DEVICES);
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_TRUE(contains(r.output,
                       "verbfault: VERBFAULT_SIM_DEVICES='lots' is invalid: expected "
                       "an integer 0..16; using 1\n"))
      << r.output;
  EXPECT_TRUE(contains(r.output, "vfsim0")) << r.output;
}

TEST(UnmodifiedBinaries, ABadProfileIsReportedInOneLineAndWithholdsTheDevices) {
  // A device of another kind than asked for would pass unnoticed: none.
  ProcessResult r = run("VERBFAULT_SIM_PROFILE=rocky", IBV_DEVICES);
  EXPECT_TRUE(contains(r.output,
                       "verbfault: VERBFAULT_SIM_PROFILE='rocky': unknown profile 'rocky'; "
                       "expected a built-in profile (cx6, ib, roce) or the path of a YAML file; "
                       "no simulated device is available\n"))
      << r.output;
  EXPECT_FALSE(contains(r.output, "vfsim0")) << r.output;
}

TEST(UnmodifiedBinaries, IbvDevinfoOnRoceShowsAnEthernetPortAndItsRoceV2Gids) {
  ProcessResult r = run("VERBFAULT_SIM_PROFILE=roce", std::string(IBV_DEVINFO) + " -v");
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "link_layer:\t\tEthernet")) << r.output;
  EXPECT_TRUE(contains(r.output, "GID[  0]:\t\tfe80::")) << r.output;
  EXPECT_TRUE(contains(r.output, ", RoCE v2")) << r.output;
  EXPECT_TRUE(contains(r.output, "GID[  1]:\t\t::ffff:198.18.")) << r.output;
}

TEST(UnmodifiedBinaries, IbvDevinfoVerboseShowsAnActivePort) {
  ProcessResult r = run("", std::string(IBV_DEVINFO) + " -v");
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "hca_id:\tvfsim0")) << r.output;
  EXPECT_TRUE(contains(r.output, "port:\t1\n\t\t\tstate:\t\t\tPORT_ACTIVE (4)")) << r.output;
  EXPECT_TRUE(contains(r.output, "link_layer:\t\tInfiniBand")) << r.output;
  EXPECT_TRUE(contains(r.output, "board_id:\t\t\tVERBFAULT_SIM")) << r.output;
  EXPECT_TRUE(contains(r.output, "max_cqe:\t\t\t4194303")) << r.output;
  EXPECT_TRUE(contains(r.output, "GID[  0]:\t\tfe80:0000:0000:0000:02fa:f100:0000:0001"))
      << r.output;
}

TEST(UnmodifiedBinaries, IbvDevinfoSelectsOneDeviceAndPort) {
  ProcessResult r = run("VERBFAULT_SIM_DEVICES=2", std::string(IBV_DEVINFO) + " -d vfsim1 -i 1");
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "hca_id:\tvfsim1")) << r.output;
  EXPECT_FALSE(contains(r.output, "hca_id:\tvfsim0")) << r.output;
  EXPECT_TRUE(contains(r.output, "port_lid:\t\t2")) << r.output;
}

TEST(UnmodifiedBinaries, IbvDevinfoRejectsAPortTheDeviceDoesNotHave) {
  ProcessResult r = run("", std::string(IBV_DEVINFO) + " -d vfsim0 -i 2");
  EXPECT_NE(r.status, 0) << r.output;
}

TEST(SampleProgram, RunsToCompletionOnTheSimulatedDevice) {
  ProcessResult r = run("", std::string(SAMPLE_RC) + " --messages 32");
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "exchanged 32 pings and 32 matching pongs")) << r.output;
  EXPECT_TRUE(contains(r.output, "RDMA-wrote 4096 bytes into the server's buffer: verified"))
      << r.output;
  EXPECT_TRUE(contains(r.output, "sample_rc: OK")) << r.output;
}

TEST(SampleProgram, RunsWithTheLibibverbsDestroyPolicy) {
  ProcessResult r = run("VERBFAULT_DESTROY_CQ_UNACKED=wait", std::string(SAMPLE_RC));
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "sample_rc: OK")) << r.output;
  EXPECT_FALSE(contains(r.output, "verbfault:")) << "no diagnosis for a correct program\n"
                                                 << r.output;
}

TEST(SampleProgram, InvalidDestroyPolicyIsReportedInOneLine) {
  ProcessResult r = run("VERBFAULT_DESTROY_CQ_UNACKED=sometimes", std::string(SAMPLE_RC));
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_TRUE(contains(r.output,
                       "verbfault: VERBFAULT_DESTROY_CQ_UNACKED='sometimes' is "
                       "invalid: expected 'fail' or 'wait'; using 'fail'\n"))
      << r.output;
}

TEST(SampleProgram, RejectsABadArgumentWithOneLine) {
  ProcessResult r = run("", std::string(SAMPLE_RC) + " --messages zero");
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_TRUE(contains(r.output, "--messages 'zero': expected an integer")) << r.output;
}

}  // namespace
