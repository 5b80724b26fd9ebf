// The fixture of the simulated connection manager's tests: one process,
// member 0 of a fabric of its own (ctest runs other tests at once, which
// may hold index 0 of the default fabric), its device 0 at 198.18.0.1
// (fabric_address.h), and the ucma commands written as librdmacm writes
// them (CMA_INIT_CMD_RESP).
#pragma once

#include "verbfault/sim/cm.h"
#include "verbfault/sim/provider.h"
#include "wire_process.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>  // before the kernel's header (linux/in6.h)
#include <rdma/ib_user_verbs.h>
#include <rdma/rdma_user_cm.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>

namespace verbfault::sim::cm {

// A command with its header, as librdmacm's CMA_INIT_CMD_RESP lays it out.
template <class Command>
struct Written {
  rdma_ucm_cmd_hdr header;
  Command command;
};

class CmFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    wire::testing::join_scratch_fabric("cm");
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

  int create_id(uint16_t port_space, uint32_t& handle, uint64_t uid = 7) {
    rdma_ucm_create_id command{};
    rdma_ucm_create_id_resp response{};
    command.uid = uid;
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

  static sockaddr_in6 ipv4(const char* address, uint16_t port) {
    sockaddr_in in{};
    in.sin_family = AF_INET;
    in.sin_port = htons(port);
    inet_pton(AF_INET, address, &in.sin_addr);
    sockaddr_in6 six{};
    std::memcpy(&six, &in, sizeof in);
    return six;
  }
  int resolve(uint32_t handle, const char* address, uint16_t port) {
    rdma_ucm_resolve_ip command{};
    command.id = handle;
    command.dst_addr = ipv4(address, port);
    command.timeout_ms = 2000;
    return run(RDMA_USER_CM_CMD_RESOLVE_IP, command);
  }
  int resolve_route(uint32_t handle) {
    rdma_ucm_resolve_route command{};
    command.id = handle;
    command.timeout_ms = 2000;
    return run(RDMA_USER_CM_CMD_RESOLVE_ROUTE, command);
  }
  int connect(uint32_t handle, uint32_t qp_num, const char* data) {
    rdma_ucm_connect command{};
    command.id = handle;
    command.conn_param.qp_num = qp_num;
    command.conn_param.responder_resources = 1;
    command.conn_param.initiator_depth = 2;
    command.conn_param.retry_count = 7;
    command.conn_param.rnr_retry_count = 7;
    command.conn_param.valid = 1;
    command.conn_param.private_data_len = static_cast<uint8_t>(std::strlen(data));
    std::memcpy(command.conn_param.private_data, data, std::strlen(data));
    return run(RDMA_USER_CM_CMD_CONNECT, command);
  }
  // ACCEPT: valid=1 with a QP (the passive side), valid=0 (the active
  // side's RTU, as librdmacm sends it after CONNECT_RESPONSE).
  int accept(uint32_t handle, uint64_t uid, std::optional<uint32_t> qp_num) {
    rdma_ucm_accept command{};
    command.id = handle;
    command.uid = uid;
    if (qp_num) {
      command.conn_param.qp_num = *qp_num;
      command.conn_param.responder_resources = 2;
      command.conn_param.initiator_depth = 1;
      command.conn_param.rnr_retry_count = 7;
      command.conn_param.valid = 1;
    }
    return run(RDMA_USER_CM_CMD_ACCEPT, command);
  }
  int disconnect(uint32_t handle) {
    rdma_ucm_disconnect command{};
    command.id = handle;
    return run(RDMA_USER_CM_CMD_DISCONNECT, command);
  }
  int destroy(uint32_t handle, uint32_t& events_reported) {
    rdma_ucm_destroy_id command{};
    rdma_ucm_destroy_id_resp response{};
    command.id = handle;
    command.response = reinterpret_cast<uintptr_t>(&response);
    const int error = run(RDMA_USER_CM_CMD_DESTROY_ID, command, sizeof response);
    events_reported = response.events_reported;
    return error;
  }
  ib_uverbs_qp_attr qp_attr(uint32_t handle, ibv_qp_state state, int* error = nullptr) {
    rdma_ucm_init_qp_attr command{};
    ib_uverbs_qp_attr response{};
    command.id = handle;
    command.qp_state = state;
    command.response = reinterpret_cast<uintptr_t>(&response);
    const int result = run(RDMA_USER_CM_CMD_INIT_QP_ATTR, command, sizeof response);
    if (error != nullptr)
      *error = result;
    else
      EXPECT_EQ(result, 0);
    return response;
  }
  // The next event, without waiting (the file is made non-blocking).
  std::optional<rdma_ucm_event_resp> next_event() {
    fcntl(fd_, F_SETFL, fcntl(fd_, F_GETFL) | O_NONBLOCK);
    rdma_ucm_get_event command{};
    rdma_ucm_event_resp response{};
    command.response = reinterpret_cast<uintptr_t>(&response);
    if (run(RDMA_USER_CM_CMD_GET_EVENT, command, sizeof response) != 0) return std::nullopt;
    return response;
  }

  int fd_ = -1;
};

}  // namespace verbfault::sim::cm
