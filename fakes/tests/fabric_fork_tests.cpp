// A child made by fork(2) from a member of a local fabric is not that
// member (sim/fabric/fabric.cpp, Fabric::leave_after_fork): it drops its copies of
// the wire's descriptors, so the peers see the member gone when the member
// goes, however long the child lives; once it opens a device of its own it
// joins as a new member (Fabric::rejoin_after_fork), as rdma-core's tests'
// forked active and passive sides do. The test process itself never
// touches the device: each member is a forked child.
#include "device.h"
#include "fabric.h"
#include "fabric_address.h"
#include "verbfault/sim/provider.h"
#include "wire_process.h"

#include <signal.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

namespace verbfault::sim {
namespace {

using wire::testing::Child;
using wire::testing::ScratchFabric;
using wire::testing::spawn;

struct Report {
  pid_t grandchild = 0;
  bool left = false;  // the grandchild had no wire after fork
};

TEST(FabricFork, ChildOfAMemberLeavesTheFabric) {
  ScratchFabric fabric("forkleave");
  int report_pipe[2];
  ASSERT_EQ(pipe(report_pipe), 0);
  Child member = spawn([&] {
    setenv("VERBFAULT_FABRIC", fabric.name().c_str(), 1);
    setenv("VERBFAULT_PROC", "0", 1);
    CHILD_CHECK(!sim::devices().empty());
    ibv_context* context = sim::open_device(sim::devices()[0]);  // starts the service thread
    CHILD_CHECK(context != nullptr && process_fabric().started_endpoint() != nullptr);
    const pid_t grandchild = fork();
    CHILD_CHECK(grandchild >= 0);
    if (grandchild == 0) {
      Report report{getpid(), process_fabric().started_endpoint() == nullptr};
      if (write(report_pipe[1], &report, sizeof report) != sizeof report) _exit(3);
      sleep(30);  // outlives the member; killed by the test
      _exit(0);
    }
    return 0;  // the member ends; its child lives on
  });
  ASSERT_EQ(member.wait(), 0);
  Report report;
  ASSERT_EQ(read(report_pipe[0], &report, sizeof report), static_cast<ssize_t>(sizeof report));
  close(report_pipe[0]);
  close(report_pipe[1]);
  EXPECT_TRUE(report.left) << "the forked child still had the member's wire";
  // The member is gone while its child lives: its index is free (with the
  // child holding a copy of the member's socket, the name would stay bound).
  Child joiner = spawn([&] {
    for (int attempt = 0; attempt < 100; ++attempt) {
      std::string error;
      if (wire::Endpoint::join(fabric.name(), 0, error) != nullptr) return 0;
      usleep(10'000);
    }
    return 1;
  });
  EXPECT_EQ(joiner.wait(), 0) << "member index 0 stayed taken after the member ended";
  kill(report.grandchild, SIGKILL);
}

// The child opens the device: a member of its own, at the lowest free
// index (1: the parent holds 0), its addresses that member's.
TEST(FabricFork, ChildThatOpensADeviceJoinsAsANewMember) {
  ScratchFabric fabric("forkjoin");
  Child member = spawn([&] {
    setenv("VERBFAULT_FABRIC", fabric.name().c_str(), 1);
    setenv("VERBFAULT_PROC", "0", 1);
    CHILD_CHECK(!sim::devices().empty());
    ibv_context* context = sim::open_device(sim::devices()[0]);
    CHILD_CHECK(context != nullptr && process_fabric().member() == 0);
    Child grandchild = spawn([&] {
      CHILD_CHECK(process_fabric().started_endpoint() == nullptr);  // left, not yet joined
      ibv_context* own = sim::open_device(sim::devices()[0]);
      CHILD_CHECK(own != nullptr);
      CHILD_CHECK(process_fabric().started_endpoint() != nullptr);
      CHILD_CHECK(process_fabric().member() == 1);
      const Device& device = *Device::from(sim::devices()[0]);
      CHILD_CHECK(device.ethernet() ? device.lid() == 0 : device.lid() == lid_of(1, 0));
      CHILD_CHECK(device.profile().device.node_guid !=
                  htobe64(device.ethernet() ? eui64_of(0, 0) : ib_guid_of(0, 0)));
      return 0;
    });
    CHILD_CHECK(grandchild.wait() == 0);
    CHILD_CHECK(process_fabric().member() == 0);  // the parent is still member 0
    return 0;
  });
  EXPECT_EQ(member.wait(), 0);
}

}  // namespace
}  // namespace verbfault::sim
