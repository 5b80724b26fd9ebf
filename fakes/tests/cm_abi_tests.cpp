// The simulated connection manager's command interface, as librdmacm
// writes it to /dev/infiniband/rdma_cm (<rdma/rdma_user_cm.h>): the
// kernel's checks and errnos (drivers/infiniband/core/ucma.c, cma.c), ids,
// binding and listening. One process, member 0 of a fabric of its own
// (ctest runs other tests at once, which may hold index 0 of the default
// fabric): its device 0 has the address 198.18.0.1 (fabric_address.h).
#include "verbfault/sim/cm.h"
#include "verbfault/sim/provider.h"
#include "wire_process.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>  // before the kernel's header (linux/in6.h)
#include <rdma/rdma_user_cm.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>

namespace verbfault::sim::cm {
namespace {

// A command with its header, as librdmacm's CMA_INIT_CMD_RESP lays it out.
template <class Command>
struct Written {
  rdma_ucm_cmd_hdr header;
  Command command;
};

// Before the fabric exists (the first sim::devices() makes it): a fabric
// name of this process's own, and member index 0 on it; its status table
// file goes at exit.
void join_own_fabric() {
  static const wire::testing::ScratchFabric fabric("cm-abi");
  static const bool set = [] {
    setenv("VERBFAULT_FABRIC", fabric.name().c_str(), 1);
    setenv("VERBFAULT_PROC", "0", 1);
    return true;
  }();
  (void)set;
}

class CmFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    join_own_fabric();
    ASSERT_FALSE(sim::devices().empty());
    fd_ = open_file(O_RDWR | O_CLOEXEC);
    ASSERT_GE(fd_, 0) << std::strerror(errno);
  }
  void TearDown() override {
    if (fd_ >= 0) {
      EXPECT_EQ(close_file(fd_), 0);
    }
  }

  // write(2) of `command` as `cmd`; the errno, 0 when it returned the
  // whole length.
  template <class Command>
  int run(uint32_t cmd, const Command& command, uint16_t out = 0) {
    Written<Command> written{{cmd, static_cast<uint16_t>(sizeof command), out}, command};
    errno = 0;
    const ssize_t n = cm::write(fd_, &written, sizeof written);
    if (n == static_cast<ssize_t>(sizeof written)) return 0;
    EXPECT_EQ(n, -1);
    return errno;
  }

  int create_id(uint16_t port_space, uint32_t& handle) {
    rdma_ucm_create_id command{};
    rdma_ucm_create_id_resp response{};
    command.uid = 7;
    command.response = reinterpret_cast<uintptr_t>(&response);
    command.ps = port_space;
    const int error = run(RDMA_USER_CM_CMD_CREATE_ID, command, sizeof response);
    handle = response.id;
    return error;
  }

  int bind_ipv4(uint32_t handle, const char* address, uint16_t port) {
    rdma_ucm_bind command{};
    command.id = handle;
    sockaddr_in in{};
    in.sin_family = AF_INET;
    in.sin_port = htons(port);
    inet_pton(AF_INET, address, &in.sin_addr);
    std::memcpy(&command.addr, &in, sizeof in);
    command.addr_size = sizeof in;
    return run(RDMA_USER_CM_CMD_BIND, command);
  }

  int listen(uint32_t handle, uint32_t backlog = 10) {
    rdma_ucm_listen command{};
    command.id = handle;
    command.backlog = backlog;
    return run(RDMA_USER_CM_CMD_LISTEN, command);
  }

  rdma_ucm_query_route_resp route(uint32_t handle) {
    rdma_ucm_query command{};
    rdma_ucm_query_route_resp response{};
    command.id = handle;
    command.response = reinterpret_cast<uintptr_t>(&response);
    EXPECT_EQ(run(RDMA_USER_CM_CMD_QUERY_ROUTE, command, sizeof response), 0);
    return response;
  }

  int fd_ = -1;
};

TEST_F(CmFileTest, IsAFileOnlyWhileOpen) {
  EXPECT_TRUE(is_file(fd_));
  EXPECT_FALSE(is_file(0));
  EXPECT_FALSE(is_file(-1));
}

TEST_F(CmFileTest, MalformedWritesFailAsTheKernelsUcmaWrite) {
  uint8_t bytes[64] = {};
  errno = 0;
  EXPECT_EQ(cm::write(fd_, bytes, 4), -1);  // shorter than the header
  EXPECT_EQ(errno, EINVAL);
  rdma_ucm_cmd_hdr header{RDMA_USER_CM_CMD_JOIN_MCAST + 1, 0, 0};
  std::memcpy(bytes, &header, sizeof header);
  EXPECT_EQ(cm::write(fd_, bytes, sizeof bytes), -1);  // no such command
  EXPECT_EQ(errno, EINVAL);
  header = {RDMA_USER_CM_CMD_CREATE_ID, 200, 0};  // more input than written
  std::memcpy(bytes, &header, sizeof header);
  EXPECT_EQ(cm::write(fd_, bytes, sizeof bytes), -1);
  EXPECT_EQ(errno, EINVAL);
  header = {RDMA_USER_CM_CMD_CREATE_ID, 4, 0};  // less input than the command
  std::memcpy(bytes, &header, sizeof header);
  EXPECT_EQ(cm::write(fd_, bytes, sizeof bytes), -1);
  EXPECT_EQ(errno, EINVAL);
}

TEST_F(CmFileTest, CreateIdChecksThePortSpaceAndTheResponseSpace) {
  uint32_t first = 99, second = 99;
  EXPECT_EQ(create_id(RDMA_PS_TCP, first), 0);
  EXPECT_EQ(create_id(RDMA_PS_UDP, second), 0);
  EXPECT_NE(first, second);
  uint32_t unused;
  EXPECT_EQ(create_id(0x4242, unused), EINVAL);
  rdma_ucm_create_id command{};
  rdma_ucm_create_id_resp response{};
  command.response = reinterpret_cast<uintptr_t>(&response);
  command.ps = RDMA_PS_TCP;
  EXPECT_EQ(run(RDMA_USER_CM_CMD_CREATE_ID, command, sizeof response - 1), ENOSPC);
}

TEST_F(CmFileTest, DestroyIdReportsItsEventsAndForgetsTheId) {
  uint32_t handle;
  ASSERT_EQ(create_id(RDMA_PS_TCP, handle), 0);
  rdma_ucm_destroy_id command{};
  rdma_ucm_destroy_id_resp response{};
  response.events_reported = 99;
  command.id = handle;
  command.response = reinterpret_cast<uintptr_t>(&response);
  EXPECT_EQ(run(RDMA_USER_CM_CMD_DESTROY_ID, command, sizeof response), 0);
  EXPECT_EQ(response.events_reported, 0u);
  EXPECT_EQ(run(RDMA_USER_CM_CMD_DESTROY_ID, command, sizeof response), ENOENT);
}

TEST_F(CmFileTest, AnIdOfAnotherFileIsNotThisFilesToUse) {
  uint32_t handle;
  ASSERT_EQ(create_id(RDMA_PS_TCP, handle), 0);
  const int other = open_file(O_RDWR);
  ASSERT_GE(other, 0);
  Written<rdma_ucm_listen> written{{RDMA_USER_CM_CMD_LISTEN, sizeof(rdma_ucm_listen), 0},
                                   {handle, 1}};
  EXPECT_EQ(cm::write(other, &written, sizeof written), -1);
  EXPECT_EQ(errno, EINVAL);
  EXPECT_EQ(close_file(other), 0);
}

TEST_F(CmFileTest, BindTakesTheWildcardOrAnAddressOfASimulatedPort) {
  uint32_t any, own, foreign;
  ASSERT_EQ(create_id(RDMA_PS_TCP, any), 0);
  ASSERT_EQ(create_id(RDMA_PS_TCP, own), 0);
  ASSERT_EQ(create_id(RDMA_PS_TCP, foreign), 0);
  EXPECT_EQ(bind_ipv4(any, "0.0.0.0", 7471), 0);
  EXPECT_EQ(route(any).node_guid, 0u);  // no device behind the wildcard
  EXPECT_EQ(bind_ipv4(own, "198.18.0.1", 7472), 0);
  const rdma_ucm_query_route_resp bound = route(own);
  EXPECT_NE(bound.node_guid, 0u);
  EXPECT_EQ(bound.port_num, 1);
  EXPECT_EQ(bound.num_paths, 0u);  // no route before it is resolved
  EXPECT_EQ(bind_ipv4(foreign, "192.0.2.1", 7473), EADDRNOTAVAIL);
  EXPECT_EQ(bind_ipv4(own, "198.18.0.1", 7474), EINVAL);  // bound already
}

// cma_check_port: beside the wildcard a port is not
// available (a second rping server on 0.0.0.0 prints "Cannot assign
// requested address"); the same specific address is in use; REUSEADDR on
// both lets ids bind together, and a listen needs the port alone.
TEST_F(CmFileTest, APortIsTakenOnceUnlessBothAskToReuseIt) {
  uint32_t first, second, third, specific, again;
  ASSERT_EQ(create_id(RDMA_PS_TCP, first), 0);
  ASSERT_EQ(create_id(RDMA_PS_TCP, second), 0);
  ASSERT_EQ(create_id(RDMA_PS_UDP, third), 0);
  EXPECT_EQ(bind_ipv4(first, "0.0.0.0", 7480), 0);
  EXPECT_EQ(bind_ipv4(second, "198.18.0.1", 7480), EADDRNOTAVAIL);
  EXPECT_EQ(bind_ipv4(third, "0.0.0.0", 7480), 0);  // another port space
  ASSERT_EQ(create_id(RDMA_PS_TCP, specific), 0);
  ASSERT_EQ(create_id(RDMA_PS_TCP, again), 0);
  EXPECT_EQ(bind_ipv4(specific, "198.18.0.1", 7481), 0);
  EXPECT_EQ(bind_ipv4(again, "198.18.0.1", 7481), EADDRINUSE);

  uint32_t reusing[2];
  int yes = 1;
  for (uint32_t& handle : reusing) {
    ASSERT_EQ(create_id(RDMA_PS_TCP, handle), 0);
    rdma_ucm_set_option option{};
    option.id = handle;
    option.level = RDMA_OPTION_ID;
    option.optname = RDMA_OPTION_ID_REUSEADDR;
    option.optval = reinterpret_cast<uintptr_t>(&yes);
    option.optlen = sizeof yes;
    EXPECT_EQ(run(RDMA_USER_CM_CMD_SET_OPTION, option), 0);
    EXPECT_EQ(bind_ipv4(handle, "0.0.0.0", 7482), 0);
  }
  // rdma_listen checks the port again without REUSEADDR (cma_bind_listen):
  // beside another owner neither listens; alone, one does.
  EXPECT_EQ(listen(reusing[0]), EADDRNOTAVAIL);
  rdma_ucm_destroy_id destroy{};
  rdma_ucm_destroy_id_resp destroyed{};
  destroy.id = reusing[1];
  destroy.response = reinterpret_cast<uintptr_t>(&destroyed);
  ASSERT_EQ(run(RDMA_USER_CM_CMD_DESTROY_ID, destroy, sizeof destroyed), 0);
  EXPECT_EQ(listen(reusing[0]), 0);
}

// The kernel binds a loopback address with no device (cma_any_addr); not
// served yet (cm_addresses.h says why): the errno of an address nobody has.
TEST_F(CmFileTest, ALoopbackAddressIsNotBoundYet) {
  uint32_t handle;
  ASSERT_EQ(create_id(RDMA_PS_TCP, handle), 0);
  EXPECT_EQ(bind_ipv4(handle, "127.0.0.1", 7490), EADDRNOTAVAIL);
}

TEST_F(CmFileTest, PortZeroTakesAnEphemeralPort) {
  uint32_t handle;
  ASSERT_EQ(create_id(RDMA_PS_TCP, handle), 0);
  EXPECT_EQ(bind_ipv4(handle, "0.0.0.0", 0), 0);
  const rdma_ucm_query_route_resp bound = route(handle);
  EXPECT_GE(ntohs(bound.src_addr.sin6_port), 32768);
}

TEST_F(CmFileTest, ListenBindsAnIdleIdAndOnePortHasOneListener) {
  uint32_t first, second;
  ASSERT_EQ(create_id(RDMA_PS_TCP, first), 0);
  ASSERT_EQ(create_id(RDMA_PS_TCP, second), 0);
  EXPECT_EQ(listen(first), 0);  // bound to the wildcard, an ephemeral port
  const uint16_t port = ntohs(route(first).src_addr.sin6_port);
  EXPECT_NE(port, 0);
  EXPECT_EQ(listen(first), EINVAL);                                 // listening already
  EXPECT_EQ(bind_ipv4(second, "198.18.0.1", port), EADDRNOTAVAIL);  // beside the wildcard
}

TEST_F(CmFileTest, SetOptionChecksEachOptionsLength) {
  uint32_t handle;
  ASSERT_EQ(create_id(RDMA_PS_TCP, handle), 0);
  uint8_t tos = 32;
  rdma_ucm_set_option option{};
  option.id = handle;
  option.level = RDMA_OPTION_ID;
  option.optname = RDMA_OPTION_ID_TOS;
  option.optval = reinterpret_cast<uintptr_t>(&tos);
  option.optlen = sizeof tos;
  EXPECT_EQ(run(RDMA_USER_CM_CMD_SET_OPTION, option), 0);
  option.optlen = 4;
  EXPECT_EQ(run(RDMA_USER_CM_CMD_SET_OPTION, option), EINVAL);
  option.optname = 77;
  option.optlen = 1;
  EXPECT_EQ(run(RDMA_USER_CM_CMD_SET_OPTION, option), ENOSYS);
}

TEST_F(CmFileTest, GetEventOnANonBlockingFileWithNoEventIsEagain) {
  ASSERT_EQ(fcntl(fd_, F_SETFL, fcntl(fd_, F_GETFL) | O_NONBLOCK), 0);
  rdma_ucm_get_event command{};
  rdma_ucm_event_resp response{};
  command.response = reinterpret_cast<uintptr_t>(&response);
  EXPECT_EQ(run(RDMA_USER_CM_CMD_GET_EVENT, command, sizeof response), EAGAIN);
  EXPECT_EQ(run(RDMA_USER_CM_CMD_GET_EVENT, command, sizeof response - 1), ENOSPC);
}

TEST_F(CmFileTest, CommandsNotServedYetSayENOSYS) {
  rdma_ucm_resolve_route command{};
  EXPECT_EQ(run(RDMA_USER_CM_CMD_RESOLVE_ROUTE, command), ENOSYS);
}

}  // namespace
}  // namespace verbfault::sim::cm
