// librdmacm itself, linked as a user's test links it, on the simulated
// connection manager (sim/cm: the kernel's command interface behind
// /dev/infiniband/rdma_cm): one process, the server side on a thread of
// its own where the program needs one. Member 0 of a fabric of its own
// (ctest runs other tests at once).
#include "rdmacm_table.h"
#include "wire_process.h"

#include <rdma/rdma_cma.h>
#include <rdma/rdma_verbs.h>

#include <gtest/gtest.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <future>
#include <string>
#include <thread>

namespace verbfault::testing {
namespace {

class Librdmacm : public ::testing::Test {
 protected:
  void SetUp() override { sim::wire::testing::join_scratch_fabric("librdmacm"); }
};

rdma_addrinfo* address_info(const char* node, const char* service, bool passive) {
  rdma_addrinfo hints{};
  hints.ai_port_space = RDMA_PS_TCP;
  if (passive) hints.ai_flags = RAI_PASSIVE;
  rdma_addrinfo* info = nullptr;
  return rdma_getaddrinfo(node, service, &hints, &info) == 0 ? info : nullptr;
}

ibv_qp_init_attr qp_attributes() {
  ibv_qp_init_attr attr{};
  attr.cap.max_send_wr = attr.cap.max_recv_wr = 4;
  attr.cap.max_send_sge = attr.cap.max_recv_sge = 1;
  attr.sq_sig_all = 1;
  return attr;
}

// rdma_server and rdma_client in one: synchronous endpoints made by
// rdma_create_ep (rdma_getaddrinfo, a private channel each, the listener's
// request migrated to a channel of its own), a message each way through
// the rdma_verbs.h helpers, and both sides disconnected.
TEST_F(Librdmacm, SynchronousEndpointsExchangeAMessage) {
  std::promise<void> listening;
  std::string server_got;
  std::thread server([&] {
    rdma_addrinfo* info = address_info(nullptr, "7601", true);
    ASSERT_NE(info, nullptr) << std::strerror(errno);
    ibv_qp_init_attr attr = qp_attributes();
    rdma_cm_id* listener = nullptr;
    ASSERT_EQ(rdma_create_ep(&listener, info, nullptr, &attr), 0) << std::strerror(errno);
    rdma_freeaddrinfo(info);
    ASSERT_EQ(rdma_listen(listener, 0), 0) << std::strerror(errno);
    listening.set_value();
    rdma_cm_id* id = nullptr;
    ASSERT_EQ(rdma_get_request(listener, &id), 0) << std::strerror(errno);
    char buffer[16] = {};
    ibv_mr* mr = rdma_reg_msgs(id, buffer, sizeof buffer);
    ASSERT_NE(mr, nullptr);
    ASSERT_EQ(rdma_post_recv(id, nullptr, buffer, sizeof buffer, mr), 0);
    ASSERT_EQ(rdma_accept(id, nullptr), 0) << std::strerror(errno);
    ibv_wc wc{};
    ASSERT_EQ(rdma_get_recv_comp(id, &wc), 1);
    EXPECT_EQ(wc.status, IBV_WC_SUCCESS);
    server_got.assign(buffer, wc.byte_len);
    std::strcpy(buffer, "world");
    ASSERT_EQ(rdma_post_send(id, nullptr, buffer, 6, mr, 0), 0);
    ASSERT_EQ(rdma_get_send_comp(id, &wc), 1);
    EXPECT_EQ(wc.status, IBV_WC_SUCCESS);
    EXPECT_EQ(rdma_disconnect(id), 0);
    rdma_dereg_mr(mr);
    rdma_destroy_ep(id);
    rdma_destroy_ep(listener);
  });
  listening.get_future().wait();

  rdma_addrinfo* info = address_info("127.0.0.1", "7601", false);
  ASSERT_NE(info, nullptr) << std::strerror(errno);
  ibv_qp_init_attr attr = qp_attributes();
  rdma_cm_id* id = nullptr;
  ASSERT_EQ(rdma_create_ep(&id, info, nullptr, &attr), 0) << std::strerror(errno);
  rdma_freeaddrinfo(info);
  char buffer[16] = {};
  ibv_mr* mr = rdma_reg_msgs(id, buffer, sizeof buffer);
  ASSERT_NE(mr, nullptr);
  ASSERT_EQ(rdma_post_recv(id, nullptr, buffer + 8, 8, mr), 0);
  ASSERT_EQ(rdma_connect(id, nullptr), 0) << std::strerror(errno);
  std::strcpy(buffer, "hello");
  ASSERT_EQ(rdma_post_send(id, nullptr, buffer, 6, mr, 0), 0);
  ibv_wc wc{};
  ASSERT_EQ(rdma_get_send_comp(id, &wc), 1);
  EXPECT_EQ(wc.status, IBV_WC_SUCCESS);
  ASSERT_EQ(rdma_get_recv_comp(id, &wc), 1);
  EXPECT_EQ(wc.status, IBV_WC_SUCCESS);
  EXPECT_STREQ(buffer + 8, "world");
  // Each side's synchronous rdma_disconnect waits for its DISCONNECTED:
  // the other's DREQ or its DREP, so both disconnect before the join.
  EXPECT_EQ(rdma_disconnect(id), 0);
  server.join();
  EXPECT_EQ(server_got, std::string("hello", 6));
  rdma_dereg_mr(mr);
  rdma_destroy_ep(id);
}

// The next event on `channel`, acknowledged, as its type and status.
struct Event {
  rdma_cm_event_type type;
  int status;
  rdma_cm_id* id;
  std::string private_data;
};
Event next(rdma_event_channel* channel) {
  rdma_cm_event* event = nullptr;
  if (rdma_get_cm_event(channel, &event) != 0)
    return {RDMA_CM_EVENT_DEVICE_REMOVAL, -errno, nullptr, {}};
  Event got{event->event, event->status, event->id, {}};
  if (event->param.conn.private_data != nullptr)
    got.private_data.assign(static_cast<const char*>(event->param.conn.private_data),
                            event->param.conn.private_data_len);
  rdma_ack_cm_event(event);
  return got;
}

// One thread, two channels: the events of each side in the order
// librdmacm's users expect them, the private data of a REQ and of a REJ
// with the lengths of their IB CM messages (56 after the rdma_cm header,
// 148), and a connect to a port nobody listens on rejected with reason 8.
TEST_F(Librdmacm, AsynchronousEventsOfARejectedAndAnUnheardConnect) {
  rdma_event_channel* server_channel = rdma_create_event_channel();
  rdma_event_channel* client_channel = rdma_create_event_channel();
  ASSERT_NE(server_channel, nullptr) << std::strerror(errno);
  ASSERT_NE(client_channel, nullptr);
  rdma_cm_id* listener = nullptr;
  rdma_cm_id* client = nullptr;
  ASSERT_EQ(rdma_create_id(server_channel, &listener, nullptr, RDMA_PS_TCP), 0);
  ASSERT_EQ(rdma_create_id(client_channel, &client, nullptr, RDMA_PS_TCP), 0);
  sockaddr_in any{};
  any.sin_family = AF_INET;
  any.sin_port = htons(7602);
  ASSERT_EQ(rdma_bind_addr(listener, reinterpret_cast<sockaddr*>(&any)), 0);
  ASSERT_EQ(rdma_listen(listener, 4), 0);

  sockaddr_in to{};
  to.sin_family = AF_INET;
  to.sin_port = htons(7602);
  to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(rdma_resolve_addr(client, nullptr, reinterpret_cast<sockaddr*>(&to), 2000), 0);
  EXPECT_EQ(next(client_channel).type, RDMA_CM_EVENT_ADDR_RESOLVED);
  ASSERT_EQ(rdma_resolve_route(client, 2000), 0);
  EXPECT_EQ(next(client_channel).type, RDMA_CM_EVENT_ROUTE_RESOLVED);
  rdma_conn_param param{};
  param.private_data = "req";
  param.private_data_len = 3;
  param.qp_num = 0x42;  // no QP: the peer never gets that far
  ASSERT_EQ(rdma_connect(client, &param), 0) << std::strerror(errno);
  Event request = next(server_channel);
  ASSERT_EQ(request.type, RDMA_CM_EVENT_CONNECT_REQUEST);
  EXPECT_EQ(request.private_data.size(), 56u);
  EXPECT_EQ(request.private_data.substr(0, 3), "req");
  ASSERT_EQ(rdma_reject(request.id, "no", 2), 0);
  Event rejected = next(client_channel);
  EXPECT_EQ(rejected.type, RDMA_CM_EVENT_REJECTED);
  EXPECT_EQ(rejected.status, 28);  // IB_CM_REJ_CONSUMER_DEFINED
  EXPECT_EQ(rejected.private_data.size(), 148u);
  EXPECT_EQ(rejected.private_data.substr(0, 2), "no");
  EXPECT_STREQ(rdma_event_str(rejected.type), "RDMA_CM_EVENT_REJECTED");
  EXPECT_EQ(rdma_destroy_id(request.id), 0);

  rdma_cm_id* unheard = nullptr;
  ASSERT_EQ(rdma_create_id(client_channel, &unheard, nullptr, RDMA_PS_TCP), 0);
  to.sin_port = htons(7603);
  ASSERT_EQ(rdma_resolve_addr(unheard, nullptr, reinterpret_cast<sockaddr*>(&to), 2000), 0);
  EXPECT_EQ(next(client_channel).type, RDMA_CM_EVENT_ADDR_RESOLVED);
  ASSERT_EQ(rdma_resolve_route(unheard, 2000), 0);
  EXPECT_EQ(next(client_channel).type, RDMA_CM_EVENT_ROUTE_RESOLVED);
  ASSERT_EQ(rdma_connect(unheard, &param), 0);
  Event nobody = next(client_channel);
  EXPECT_EQ(nobody.type, RDMA_CM_EVENT_REJECTED);
  EXPECT_EQ(nobody.status, 8);  // IB_CM_REJ_INVALID_SERVICE_ID

  EXPECT_EQ(rdma_destroy_id(unheard), 0);
  EXPECT_EQ(rdma_destroy_id(client), 0);
  EXPECT_EQ(rdma_destroy_id(listener), 0);
  rdma_destroy_event_channel(client_channel);
  rdma_destroy_event_channel(server_channel);
}

// Bad calls get librdmacm's errnos, from the kernel's checks: an address
// no port has (EADDRNOTAVAIL), accept on an id that is no listener's child
// (EINVAL: not in CONNECT), a bound id bound again (EINVAL), and an
// address rdma_getaddrinfo cannot parse fails there.
TEST_F(Librdmacm, BadCallsFailWithTheDocumentedErrno) {
  rdma_event_channel* channel = rdma_create_event_channel();
  ASSERT_NE(channel, nullptr);
  rdma_cm_id* id = nullptr;
  rdma_cm_id* other = nullptr;
  ASSERT_EQ(rdma_create_id(channel, &id, nullptr, RDMA_PS_TCP), 0);
  ASSERT_EQ(rdma_create_id(channel, &other, nullptr, RDMA_PS_TCP), 0);
  sockaddr_in nobody{};
  nobody.sin_family = AF_INET;
  nobody.sin_addr.s_addr = htonl(0xc0000201);  // 192.0.2.1: no port has it
  errno = 0;
  EXPECT_EQ(rdma_bind_addr(other, reinterpret_cast<sockaddr*>(&nobody)), -1);
  EXPECT_EQ(errno, EADDRNOTAVAIL);
  sockaddr_in own{};
  own.sin_family = AF_INET;
  own.sin_port = htons(7604);
  own.sin_addr.s_addr = htonl(0xc6120001);  // 198.18.0.1: member 0's port
  ASSERT_EQ(rdma_bind_addr(id, reinterpret_cast<sockaddr*>(&own)), 0) << std::strerror(errno);
  EXPECT_NE(id->verbs, nullptr);  // bound to the port's device
  errno = 0;
  EXPECT_EQ(rdma_bind_addr(id, reinterpret_cast<sockaddr*>(&own)), -1);
  EXPECT_EQ(errno, EINVAL);
  rdma_conn_param param{};
  param.qp_num = 0x42;
  errno = 0;
  EXPECT_EQ(rdma_accept(id, &param), -1);
  EXPECT_EQ(errno, EINVAL);
  rdma_addrinfo hints{};
  hints.ai_flags = RAI_NUMERICHOST;  // no name service asked
  rdma_addrinfo* info = nullptr;
  EXPECT_NE(rdma_getaddrinfo("198.18.0.one", "7604", &hints, &info), 0);
  EXPECT_EQ(rdma_destroy_id(other), 0);
  EXPECT_EQ(rdma_destroy_id(id), 0);
  rdma_destroy_event_channel(channel);
}

// librdmacm dereferences the id (the channel, the event) it is given; the
// front door refuses a NULL one with EINVAL (rdma_cm(7): an invalid
// argument) for every function of its table (frontdoor/rdmacm_table.h),
// where the program would otherwise die in librdmacm.
template <class First, class... Rest>
int called_with_null(int (*function)(First*, Rest...)) {
  errno = 0;
  return function(nullptr, Rest{}...);
}

TEST_F(Librdmacm, EveryFunctionOfTheTableRefusesANullFirstArgument) {
  int rows = 0;
#define VERBFAULT_NULL_FIRST(name, version, params, args, guard)         \
  ++rows;                                                               \
  EXPECT_EQ(called_with_null(&name), -1) << #name;                      \
  EXPECT_EQ(errno, EINVAL) << #name;
  VERBFAULT_RDMACM_CALLS(VERBFAULT_NULL_FIRST)
#undef VERBFAULT_NULL_FIRST
  EXPECT_GE(rows, 23);
}

}  // namespace
}  // namespace verbfault::testing
