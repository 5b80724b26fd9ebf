// The simulated connection manager's command interface, as librdmacm
// writes it to /dev/infiniband/rdma_cm (<rdma/rdma_user_cm.h>): the
// kernel's checks and errnos (drivers/infiniband/core/ucma.c, cma.c), ids,
// binding and listening. One process, member 0 of a fabric of its own
// (ctest runs other tests at once, which may hold index 0 of the default
// fabric): its device 0 has the address 198.18.0.1 (fabric_address.h).
#include "cm_file_fixture.h"

namespace verbfault::sim::cm {
namespace {

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

// The kernel binds a loopback address with no device (cma_any_addr): the
// id has no port until it resolves, and the port number is taken as by the
// wildcard (a port address beside it is refused, cma_check_port).
TEST_F(CmFileTest, ALoopbackAddressBindsNoDevice) {
  uint32_t handle, beside;
  ASSERT_EQ(create_id(RDMA_PS_TCP, handle), 0);
  ASSERT_EQ(create_id(RDMA_PS_TCP, beside), 0);
  EXPECT_EQ(bind_ipv4(handle, "127.0.0.1", 7490), 0);
  const rdma_ucm_query_route_resp bound = route(handle);
  EXPECT_EQ(bound.node_guid, 0u);
  EXPECT_EQ(bound.port_num, 0);
  EXPECT_EQ(ntohs(bound.src_addr.sin6_port), 7490);
  EXPECT_EQ(bind_ipv4(beside, "198.18.0.1", 7490), EADDRNOTAVAIL);
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
  // ucma_get_event: room up to `reserved` (an older librdmacm's response).
  const auto shortest = static_cast<uint16_t>(offsetof(rdma_ucm_event_resp, reserved));
  EXPECT_EQ(run(RDMA_USER_CM_CMD_GET_EVENT, command, shortest), EAGAIN);
  EXPECT_EQ(run(RDMA_USER_CM_CMD_GET_EVENT, command, shortest - 1), ENOSPC);
}

// GET_OPTION has no handler in the kernel: ENOSYS, said, never pretended.
TEST_F(CmFileTest, GetOptionSaysENOSYSAsTheKernelDoes) {
  rdma_ucm_query get_option{};
  EXPECT_EQ(run(RDMA_USER_CM_CMD_GET_OPTION, get_option), ENOSYS);
}

// ucma_process_join / ucma_leave_multicast: the checks in their order, the
// join's own handle, its MULTICAST_JOIN event (the join's uid and id, the
// group's address vector) and the count LEAVE_MCAST returns.
TEST_F(CmFileTest, AJoinHasItsOwnHandleEventAndCount) {
  uint32_t handle;
  ASSERT_EQ(create_id(RDMA_PS_UDP, handle), 0);
  rdma_ucm_create_id_resp joined{};
  rdma_ucm_join_mcast join{};
  join.response = reinterpret_cast<uintptr_t>(&joined);
  join.uid = 0x5150;
  join.id = handle;
  const sockaddr_in6 group = ipv4("239.1.1.1", 0);
  std::memcpy(&join.addr, &group, sizeof(sockaddr_in));
  join.addr_size = sizeof(sockaddr_in);
  // Not bound to a device yet: EINVAL (ucma_get_ctx_dev).
  EXPECT_EQ(run(RDMA_USER_CM_CMD_JOIN_MCAST, join, sizeof joined), EINVAL);
  ASSERT_EQ(bind_ipv4(handle, "198.18.0.1", 7480), 0);
  // The response must fit; the size is the family's; the flags are 0 or 1.
  EXPECT_EQ(run(RDMA_USER_CM_CMD_JOIN_MCAST, join, 2), ENOSPC);
  join.addr_size = sizeof(sockaddr_in6);
  EXPECT_EQ(run(RDMA_USER_CM_CMD_JOIN_MCAST, join, sizeof joined), EINVAL);
  join.addr_size = sizeof(sockaddr_in);
  join.join_flags = 2;
  EXPECT_EQ(run(RDMA_USER_CM_CMD_JOIN_MCAST, join, sizeof joined), EINVAL);
  join.join_flags = RDMA_MC_JOIN_FLAG_FULLMEMBER;
  ASSERT_EQ(run(RDMA_USER_CM_CMD_JOIN_MCAST, join, sizeof joined), 0);
  EXPECT_EQ(joined.id, 0u);  // the multicast table's first

  const auto event = next_event();
  ASSERT_TRUE(event);
  EXPECT_EQ(event->event, 12u);  // MULTICAST_JOIN
  EXPECT_EQ(event->uid, 0x5150u);
  EXPECT_EQ(event->id, 0u);
  EXPECT_EQ(event->status, 0);
  const rdma_ucm_ud_param& ud = event->param.ud;
  EXPECT_EQ(ud.qp_num, 0xFFFFFFu);
  EXPECT_EQ(ud.qkey, 0x01234567u);
  EXPECT_EQ(ud.ah_attr.is_global, 1);
  EXPECT_EQ(ud.ah_attr.port_num, 1);
  // InfiniBand: IPoIB's mapping with the RDMA CM's signature, an MLID.
  const uint8_t mgid[16] = {0xff, 0x12, 0x40, 0x01, 0xff, 0xff, 0, 0, 0, 0, 0, 0, 0x0f, 1, 1, 1};
  EXPECT_EQ(std::memcmp(ud.ah_attr.grh.dgid, mgid, sizeof mgid), 0);
  EXPECT_GE(ud.ah_attr.dlid, 0xC001);
  EXPECT_LE(ud.ah_attr.dlid, 0xFFFE);

  // LEAVE_MCAST: an unknown join is ENOENT; the known one returns the
  // events read of it.
  rdma_ucm_destroy_id_resp left{};
  rdma_ucm_destroy_id leave{};
  leave.response = reinterpret_cast<uintptr_t>(&left);
  leave.id = 7;
  EXPECT_EQ(run(RDMA_USER_CM_CMD_LEAVE_MCAST, leave, sizeof left), ENOENT);
  leave.id = joined.id;
  ASSERT_EQ(run(RDMA_USER_CM_CMD_LEAVE_MCAST, leave, sizeof left), 0);
  EXPECT_EQ(left.events_reported, 1u);
  EXPECT_EQ(run(RDMA_USER_CM_CMD_LEAVE_MCAST, leave, sizeof left), ENOENT);
  // The join's event counted to the id too (ucma_get_event: ctx and mc):
  // rdma_destroy_id waits for its ack as well.
  rdma_ucm_destroy_id destroy{};
  rdma_ucm_destroy_id_resp destroyed{};
  destroy.response = reinterpret_cast<uintptr_t>(&destroyed);
  destroy.id = handle;
  ASSERT_EQ(run(RDMA_USER_CM_CMD_DESTROY_ID, destroy, sizeof destroyed), 0);
  EXPECT_EQ(destroyed.events_reported, 1u);

  // An RC id joins nothing (rdma_join_multicast: UD only).
  uint32_t rc;
  ASSERT_EQ(create_id(RDMA_PS_TCP, rc), 0);
  ASSERT_EQ(bind_ipv4(rc, "198.18.0.1", 7481), 0);
  join.id = rc;
  EXPECT_EQ(run(RDMA_USER_CM_CMD_JOIN_MCAST, join, sizeof joined), EINVAL);
}

// A connection to a group address: resolved (out of the first active
// port) and routed, but no CM agent answers a REQ sent to a group: the
// client's UNREACHABLE, never a connection to the listener of this
// process on the same port.
TEST_F(CmFileTest, AConnectionToAGroupAddressIsUnreachable) {
  uint32_t listener, client;
  ASSERT_EQ(create_id(RDMA_PS_TCP, listener, 100), 0);
  ASSERT_EQ(create_id(RDMA_PS_TCP, client, 300), 0);
  ASSERT_EQ(bind_ipv4(listener, "0.0.0.0", 7510), 0);
  ASSERT_EQ(listen(listener), 0);
  ASSERT_EQ(resolve(client, "239.1.1.1", 7510), 0);
  auto event = next_event();
  ASSERT_TRUE(event);
  EXPECT_EQ(event->event, 0u);  // ADDR_RESOLVED
  ASSERT_EQ(resolve_route(client), 0);
  event = next_event();
  ASSERT_TRUE(event);
  EXPECT_EQ(event->event, 2u);  // ROUTE_RESOLVED
  ASSERT_EQ(connect(client, 0x123, "hello"), 0);
  event = next_event();
  ASSERT_TRUE(event);
  EXPECT_EQ(event->event, 7u);  // UNREACHABLE
  EXPECT_EQ(event->id, client);
  EXPECT_EQ(event->status, -ETIMEDOUT);
  EXPECT_FALSE(next_event());  // no CONNECT_REQUEST at the listener
}

// One process, a listener on the wildcard and an id connecting to it by
// 127.0.0.1: the events, their uids and ids, the private-data lengths
// (REQ 56 after the rdma_cm header, REP 196), and the QP attributes that
// make the two QPs each other's peers (each side's receive PSN is the
// other's send PSN). Event numbers: enum rdma_cm_event_type.
TEST_F(CmFileTest, AConnectionRunsTheIbCmExchange) {
  uint32_t listener, client;
  ASSERT_EQ(create_id(RDMA_PS_TCP, listener, 100), 0);
  ASSERT_EQ(create_id(RDMA_PS_TCP, client, 300), 0);
  ASSERT_EQ(bind_ipv4(listener, "0.0.0.0", 7500), 0);
  ASSERT_EQ(listen(listener), 0);

  ASSERT_EQ(resolve(client, "127.0.0.1", 7500), 0);
  auto event = next_event();
  ASSERT_TRUE(event);
  EXPECT_EQ(event->event, 0u);  // ADDR_RESOLVED
  EXPECT_EQ(event->uid, 300u);
  EXPECT_EQ(event->id, client);
  EXPECT_NE(route(client).node_guid, 0u);  // bound to the first active port
  ASSERT_EQ(resolve_route(client), 0);
  event = next_event();
  ASSERT_TRUE(event);
  EXPECT_EQ(event->event, 2u);  // ROUTE_RESOLVED
  EXPECT_EQ(route(client).num_paths, 1u);
  // Before CONNECT: INIT with no remote access (cma_ib_init_qp_attr).
  ib_uverbs_qp_attr init = qp_attr(client, IBV_QPS_INIT);
  EXPECT_EQ(init.qp_attr_mask, 0x39u);
  EXPECT_EQ(init.qp_access_flags, 0u);
  EXPECT_EQ(init.port_num, 1);

  ASSERT_EQ(connect(client, 0x123, "hello"), 0);
  event = next_event();
  ASSERT_TRUE(event);
  EXPECT_EQ(event->event, 4u);  // CONNECT_REQUEST
  EXPECT_EQ(event->uid, 100u);  // the listener's
  const uint32_t child = event->id;
  EXPECT_NE(child, listener);
  EXPECT_EQ(event->param.conn.qp_num, 0x123u);
  EXPECT_EQ(event->param.conn.private_data_len, 56);
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(event->param.conn.private_data), 5), "hello");
  EXPECT_EQ(event->param.conn.responder_resources, 2);  // the requester's depth
  EXPECT_EQ(event->param.conn.initiator_depth, 1);
  EXPECT_EQ(qp_attr(child, IBV_QPS_INIT).qp_access_flags,
            unsigned{IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC});
  const ib_uverbs_qp_attr child_rtr = qp_attr(child, IBV_QPS_RTR);
  EXPECT_EQ(child_rtr.qp_attr_mask, 0x129181u);
  EXPECT_EQ(child_rtr.dest_qp_num, 0x123u);
  const ib_uverbs_qp_attr child_rts = qp_attr(child, IBV_QPS_RTS);
  EXPECT_EQ(child_rts.qp_attr_mask, 0x12E01u);

  ASSERT_EQ(accept(child, 200, 0x456), 0);
  event = next_event();
  ASSERT_TRUE(event);
  EXPECT_EQ(event->event, 5u);  // CONNECT_RESPONSE
  EXPECT_EQ(event->uid, 300u);
  EXPECT_EQ(event->param.conn.qp_num, 0x456u);
  EXPECT_EQ(event->param.conn.private_data_len, 196);
  const ib_uverbs_qp_attr client_rtr = qp_attr(client, IBV_QPS_RTR);
  const ib_uverbs_qp_attr client_rts = qp_attr(client, IBV_QPS_RTS);
  EXPECT_EQ(client_rtr.dest_qp_num, 0x456u);
  EXPECT_EQ(client_rtr.rq_psn, child_rts.sq_psn);
  EXPECT_EQ(client_rts.sq_psn, child_rtr.rq_psn);
  EXPECT_EQ(client_rts.rnr_retry, 7);
  EXPECT_EQ(client_rtr.ah_attr.dlid, child_rtr.ah_attr.dlid);  // one port, loopback

  ASSERT_EQ(accept(client, 0, std::nullopt), 0);  // the RTU
  event = next_event();
  ASSERT_TRUE(event);
  EXPECT_EQ(event->event, 9u);  // ESTABLISHED, on the child, now with its uid
  EXPECT_EQ(event->uid, 200u);
  EXPECT_EQ(event->id, child);
  EXPECT_EQ(accept(client, 0, std::nullopt), EINVAL);  // no second RTU

  ASSERT_EQ(disconnect(client), 0);  // DREQ
  event = next_event();
  ASSERT_TRUE(event);
  EXPECT_EQ(event->event, 10u);  // DISCONNECTED, the child's
  EXPECT_EQ(event->id, child);
  EXPECT_FALSE(next_event());       // the client waits for the DREP
  ASSERT_EQ(disconnect(child), 0);  // DREP
  event = next_event();
  ASSERT_TRUE(event);
  EXPECT_EQ(event->event, 10u);
  EXPECT_EQ(event->id, client);

  // The IB CM's timewait, on the virtual clock: a GET_EVENT that finds
  // nothing lets it run, and both ids get TIMEWAIT_EXIT, in id order.
  event = next_event();
  ASSERT_TRUE(event);
  EXPECT_EQ(event->event, 15u);  // TIMEWAIT_EXIT
  EXPECT_EQ(event->id, std::min(client, child));
  event = next_event();
  ASSERT_TRUE(event);
  EXPECT_EQ(event->event, 15u);
  EXPECT_EQ(event->id, std::max(client, child));
  EXPECT_FALSE(next_event());

  uint32_t reported = 0;
  ASSERT_EQ(destroy(client, reported), 0);
  EXPECT_EQ(reported, 5u);  // ADDR_RESOLVED, ROUTE_RESOLVED, CONNECT_RESPONSE, DISCONNECTED,
                            // TIMEWAIT_EXIT
  ASSERT_EQ(destroy(child, reported), 0);
  EXPECT_EQ(reported, 3u);  // ESTABLISHED, DISCONNECTED, TIMEWAIT_EXIT
  ASSERT_EQ(destroy(listener, reported), 0);
  EXPECT_EQ(reported, 1u);  // the CONNECT_REQUEST is the listener's
}

// REJECTED: reason 8 when nothing listens on the port (cm_req_handler),
// 28 when the listener is destroyed with the request unread, which also
// destroys the child it made.
TEST_F(CmFileTest, RequestsNobodyTakesAreRejected) {
  uint32_t client;
  ASSERT_EQ(create_id(RDMA_PS_TCP, client, 300), 0);
  ASSERT_EQ(resolve(client, "198.18.0.1", 7510), 0);
  ASSERT_TRUE(next_event());
  ASSERT_EQ(resolve_route(client), 0);
  ASSERT_TRUE(next_event());
  ASSERT_EQ(connect(client, 0x123, ""), 0);
  auto event = next_event();
  ASSERT_TRUE(event);
  EXPECT_EQ(event->event, 8u);  // REJECTED
  EXPECT_EQ(event->status, 8u);
  EXPECT_EQ(event->param.conn.private_data_len, 148);

  uint32_t listener, second;
  ASSERT_EQ(create_id(RDMA_PS_TCP, listener, 100), 0);
  ASSERT_EQ(bind_ipv4(listener, "198.18.0.1", 7511), 0);
  ASSERT_EQ(listen(listener), 0);
  ASSERT_EQ(create_id(RDMA_PS_TCP, second, 400), 0);
  ASSERT_EQ(resolve(second, "198.18.0.1", 7511), 0);
  ASSERT_TRUE(next_event());
  ASSERT_EQ(resolve_route(second), 0);
  ASSERT_TRUE(next_event());
  ASSERT_EQ(connect(second, 0x124, ""), 0);
  uint32_t reported = 0;
  ASSERT_EQ(destroy(listener, reported), 0);  // its CONNECT_REQUEST unread
  EXPECT_EQ(reported, 0u);
  event = next_event();
  ASSERT_TRUE(event);
  EXPECT_EQ(event->event, 8u);
  EXPECT_EQ(event->status, 28u);
  EXPECT_EQ(event->uid, 400u);
}

// An address of no simulated port resolves to ADDR_ERROR -ENODEV (the
// route leaves by a netdev without RDMA), the id bound as before.
TEST_F(CmFileTest, AnAddressNoPortHasIsAnAddressError) {
  uint32_t client;
  ASSERT_EQ(create_id(RDMA_PS_TCP, client, 300), 0);
  ASSERT_EQ(resolve(client, "192.0.2.1", 7520), 0);
  auto event = next_event();
  ASSERT_TRUE(event);
  EXPECT_EQ(event->event, 1u);  // ADDR_ERROR
  EXPECT_EQ(static_cast<int>(event->status), -ENODEV);
  EXPECT_EQ(resolve_route(client), EINVAL);
}

}  // namespace
}  // namespace verbfault::sim::cm
