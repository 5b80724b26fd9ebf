// The failures the harness's fault plan makes at their cause in the
// simulated connection manager (verbfault/sim/cm.h, Fault and the event
// calls): what each does to the id's state and events, as the kernel's
// rdma_cm would show a network that failed so.
#include "cm_file_fixture.h"
#include "fabric.h"

namespace verbfault::sim::cm {
namespace {

class CmFaultTest : public CmFileTest {
 protected:
  // write(2) of `command` as `cmd` meeting `fault`: the errno, 0 on success.
  template <class Command>
  int run_with(uint32_t cmd, const Command& command, Fault fault) {
    Written<Command> written{{cmd, static_cast<uint16_t>(sizeof command), 0}, command};
    errno = 0;
    const ssize_t n = cm::write(fd_, &written, sizeof written, fault);
    return n == static_cast<ssize_t>(sizeof written) ? 0 : errno;
  }
  // A listener on 198.18.0.1:`port` and a client resolved up to its route.
  void listen_and_resolve(uint16_t port, uint32_t& server, uint32_t& client) {
    ASSERT_EQ(create_id(RDMA_PS_TCP, server, 1), 0);
    ASSERT_EQ(bind_ipv4(server, "198.18.0.1", port), 0);
    ASSERT_EQ(listen(server), 0);
    ASSERT_EQ(create_id(RDMA_PS_TCP, client, 2), 0);
    ASSERT_EQ(resolve(client, "198.18.0.1", port), 0);
    ASSERT_EQ(next_event()->event, 0u);  // ADDR_RESOLVED
    ASSERT_EQ(resolve_route(client), 0);
    ASSERT_EQ(next_event()->event, 2u);  // ROUTE_RESOLVED
  }
  int connect_with(uint32_t client, Fault fault) {
    rdma_ucm_connect command{};
    command.id = client;
    command.conn_param.qp_num = 0x42;
    command.conn_param.retry_count = 7;
    command.conn_param.valid = 1;
    return run_with(RDMA_USER_CM_CMD_CONNECT, command, fault);
  }
};

TEST_F(CmFaultTest, AnAddressErrorTimesOutAndLeavesTheIdBound) {
  uint32_t client;
  ASSERT_EQ(create_id(RDMA_PS_TCP, client), 0);
  rdma_ucm_resolve_ip command{};
  command.id = client;
  command.dst_addr = ipv4("198.18.0.1", 7601);
  command.timeout_ms = 2000;
  ASSERT_EQ(run_with(RDMA_USER_CM_CMD_RESOLVE_IP, command, Fault::kAddrError), 0);
  auto event = next_event();
  ASSERT_TRUE(event);
  EXPECT_EQ(event->event, 1u);  // ADDR_ERROR
  EXPECT_EQ(static_cast<int>(event->status), -ETIMEDOUT);
  EXPECT_EQ(resolve_route(client), EINVAL) << "not resolved";
  // Bound as before: it may try again, and without the fault it resolves.
  ASSERT_EQ(resolve(client, "198.18.0.1", 7601), 0);
  EXPECT_EQ(next_event()->event, 0u);
}

TEST_F(CmFaultTest, ARouteErrorTimesOutOnInfiniBandAndTheIdMayTryAgain) {
  uint32_t client;
  ASSERT_EQ(create_id(RDMA_PS_TCP, client), 0);
  ASSERT_EQ(resolve(client, "198.18.0.1", 7602), 0);
  ASSERT_EQ(next_event()->event, 0u);
  rdma_ucm_resolve_route command{};
  command.id = client;
  command.timeout_ms = 2000;
  ASSERT_EQ(run_with(RDMA_USER_CM_CMD_RESOLVE_ROUTE, command, Fault::kRouteError), 0);
  auto event = next_event();
  ASSERT_TRUE(event);
  EXPECT_EQ(event->event, 3u);  // ROUTE_ERROR
  EXPECT_EQ(static_cast<int>(event->status), -ETIMEDOUT);
  ASSERT_EQ(resolve_route(client), 0) << "back in ADDR_RESOLVED";
  EXPECT_EQ(next_event()->event, 2u);
}

TEST_F(CmFaultTest, ALostRequestIsUnreachableAndThePassiveSideNeverHearsOfIt) {
  uint32_t server, client;
  listen_and_resolve(7603, server, client);
  ASSERT_EQ(connect_with(client, Fault::kUnreachable), 0);
  auto event = next_event();
  ASSERT_TRUE(event);
  EXPECT_EQ(event->id, client);
  EXPECT_EQ(event->event, 7u);  // UNREACHABLE
  EXPECT_EQ(static_cast<int>(event->status), -ETIMEDOUT);
  EXPECT_FALSE(next_event()) << "no CONNECT_REQUEST for the listener";
}

TEST_F(CmFaultTest, ARejectCarriesItsReasonAndPrivateData) {
  uint32_t server, client;
  listen_and_resolve(7604, server, client);
  ASSERT_EQ(connect_with(client, Fault::kReject), 0);
  auto event = next_event();
  ASSERT_TRUE(event);
  EXPECT_EQ(event->event, 8u);   // REJECTED
  EXPECT_EQ(event->status, 28);  // IB_CM_REJ_CONSUMER_DEFINED
  EXPECT_EQ(event->param.conn.private_data_len, 148) << "IB_CM_REJ_PRIVATE_DATA_SIZE";
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(event->param.conn.private_data),
                        kRejectPrivateData.size()),
            kRejectPrivateData);
  EXPECT_FALSE(next_event()) << "no CONNECT_REQUEST for the listener";
  // As the kernel's: a rejected id stays in CONNECT (rdma_connect wants
  // ROUTE_RESOLVED): a new attempt takes a new id.
  EXPECT_EQ(connect_with(client, Fault::kNone), EINVAL);
}

TEST_F(CmFaultTest, AWithdrawnEventIsNotCountedAsReported) {
  uint32_t client;
  ASSERT_EQ(create_id(RDMA_PS_TCP, client), 0);
  ASSERT_EQ(resolve(client, "198.18.0.1", 7605), 0);
  ASSERT_TRUE(next_event());
  EXPECT_TRUE(withdraw_event(fd_, client));
  EXPECT_FALSE(withdraw_event(fd_, client)) << "nothing more reported";
  uint32_t reported = 99;
  ASSERT_EQ(destroy(client, reported), 0);
  EXPECT_EQ(reported, 0u) << "rdma_destroy_id waits for no acknowledgement";
}

// An event held up on the way arrives after what came meanwhile, once the
// virtual clock has passed its delay (a read that finds nothing else lets
// the clock run to it, as the fabric's other deadlines).
TEST_F(CmFaultTest, ADelayedEventComesBehindWhatCameMeanwhileAfterItsDelay) {
  uint32_t first, second;
  ASSERT_EQ(create_id(RDMA_PS_TCP, first), 0);
  ASSERT_EQ(create_id(RDMA_PS_TCP, second), 0);
  ASSERT_EQ(resolve(first, "198.18.0.1", 7606), 0);
  ASSERT_EQ(next_event()->id, first);
  EXPECT_FALSE(event_was_delayed(fd_));
  const uint64_t held_at = [] {
    std::lock_guard guard(process_fabric().mutex);
    return process_fabric().clock().now();
  }();
  ASSERT_TRUE(delay_event(fd_, 5'000'000));
  EXPECT_FALSE(delay_event(fd_, 5'000'000)) << "nothing read since";
  ASSERT_EQ(resolve(second, "198.18.0.1", 7607), 0);
  auto event = next_event();
  ASSERT_TRUE(event);
  EXPECT_EQ(event->id, second) << "the later one passes the held one";
  EXPECT_FALSE(event_was_delayed(fd_));
  event = next_event();
  ASSERT_TRUE(event);
  EXPECT_EQ(event->id, first);
  EXPECT_EQ(event->event, 0u);  // ADDR_RESOLVED
  EXPECT_TRUE(event_was_delayed(fd_));
  {
    std::lock_guard guard(process_fabric().mutex);
    EXPECT_GE(process_fabric().clock().now(), held_at + 5'000'000);
  }
  EXPECT_FALSE(delay_event(fd_, 5'000'000)) << "never delayed twice";
  uint32_t reported = 99;
  ASSERT_EQ(destroy(first, reported), 0);
  EXPECT_EQ(reported, 1u) << "read twice, counted once";
}

// cm_disconnect's cause: the peer of an established connection is gone.
// The id hears DISCONNECTED as from the peer's DREQ; the peer's side is not
// told, and ignores the DREP this side's rdma_disconnect sends later.
TEST_F(CmFaultTest, APeerThatIsGoneIsHeardAsItsDisconnect) {
  uint32_t server, client;
  listen_and_resolve(7608, server, client);
  EXPECT_FALSE(peer_gone(fd_, client)) << "not connected yet";
  ASSERT_EQ(connect_with(client, Fault::kNone), 0);
  auto event = next_event();
  ASSERT_TRUE(event);
  ASSERT_EQ(event->event, 4u);  // CONNECT_REQUEST
  const uint32_t child = event->id;
  ASSERT_EQ(accept(child, 200, 0x456), 0);
  ASSERT_EQ(next_event()->event, 5u);             // CONNECT_RESPONSE
  ASSERT_EQ(accept(client, 0, std::nullopt), 0);  // the RTU
  ASSERT_EQ(next_event()->event, 9u);             // ESTABLISHED (the child's)

  ASSERT_TRUE(peer_gone(fd_, client));
  event = next_event();
  ASSERT_TRUE(event);
  EXPECT_EQ(event->id, client);
  EXPECT_EQ(event->event, 10u);  // DISCONNECTED
  EXPECT_FALSE(next_event()) << "the peer (the child) hears nothing";
  EXPECT_FALSE(peer_gone(fd_, client)) << "gone once";
  // The DREP: this side's timewait (its end read once the clock gets
  // there), the child still ESTABLISHED, hearing nothing.
  ASSERT_EQ(disconnect(client), 0);
  event = next_event();
  ASSERT_TRUE(event);
  EXPECT_EQ(event->id, client);
  EXPECT_EQ(event->event, 15u);  // TIMEWAIT_EXIT
  EXPECT_FALSE(next_event()) << "nothing for the child";
}

TEST_F(CmFaultTest, ARemovedDeviceIsHeardByEveryIdOnItAndTheirCommandsFail) {
  uint32_t server, client;
  listen_and_resolve(7609, server, client);
  uint32_t wildcard;
  ASSERT_EQ(create_id(RDMA_PS_TCP, wildcard, 3), 0);
  ASSERT_EQ(bind_ipv4(wildcard, "0.0.0.0", 7610), 0);
  ASSERT_EQ(listen(wildcard), 0);
  EXPECT_FALSE(device_removed(fd_, wildcard)) << "a wildcard listener is on no device";

  ASSERT_TRUE(device_removed(fd_, client));
  // The listener on 198.18.0.1 and the client, in id order; the wildcard
  // listener hears nothing.
  auto event = next_event();
  ASSERT_TRUE(event);
  EXPECT_EQ(event->id, server);
  EXPECT_EQ(event->event, 11u);  // DEVICE_REMOVAL
  EXPECT_EQ(event->status, 0u);
  event = next_event();
  ASSERT_TRUE(event);
  EXPECT_EQ(event->id, client);
  EXPECT_EQ(event->event, 11u);
  EXPECT_FALSE(next_event());
  // Every command but DESTROY_ID finds the id in the wrong state.
  EXPECT_EQ(connect_with(client, Fault::kNone), EINVAL);
  EXPECT_EQ(resolve_route(client), EINVAL);
  EXPECT_FALSE(device_removed(fd_, client)) << "removed once";
  uint32_t reported = 0;
  EXPECT_EQ(destroy(client, reported), 0);
}

}  // namespace
}  // namespace verbfault::sim::cm
