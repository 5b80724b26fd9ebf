// Two members of a local fabric in forked children, for the tests of what
// passes between processes: a pipe between the children, the card one
// member gives the other, and one member's device objects (a PD, a CQ, an
// RC QP), made through the simulated provider directly.
#pragma once

#include "verbfault/sim/provider.h"
#include "verbfault_testing/rc_connect.h"
#include "wire_process.h"

#include <infiniband/verbs.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

namespace verbfault::sim {

// A pipe carrying fixed-size records between the two children.
class Pipe {
 public:
  Pipe() {
    if (pipe(fds_) != 0) std::abort();
  }
  ~Pipe() {
    ::close(fds_[0]);
    ::close(fds_[1]);
  }
  template <class T>
  bool put(const T& value) {
    return ::write(fds_[1], &value, sizeof value) == static_cast<ssize_t>(sizeof value);
  }
  int read_fd() const { return fds_[0]; }
  template <class T>
  bool get(T& value) {
    return ::read(fds_[0], &value, sizeof value) == static_cast<ssize_t>(sizeof value);
  }

 private:
  int fds_[2];
};

struct Card {
  uint16_t lid = 0;
  uint32_t qpn = 0;
  uint64_t addr = 0;
  uint32_t rkey = 0;
};

// One member's device objects: a PD, a CQ, one RC QP (remote write and
// read allowed; `depth` WRs each way, the CQ four times that), and the
// regions a test registers.
class Member {
 public:
  Member(const std::string& fabric, int index, uint32_t depth = 16) {
    setenv("VERBFAULT_FABRIC", fabric.c_str(), 1);
    setenv("VERBFAULT_PROC", std::to_string(index).c_str(), 1);
    CHILD_CHECK(!sim::devices().empty());
    context_ = sim::open_device(sim::devices()[0]);
    CHILD_CHECK(context_ != nullptr);
    ibv_port_attr port{};
    CHILD_CHECK(sim::query_port(context_, 1, &port) == 0);
    lid_ = port.lid;
    pd_ = sim::alloc_pd(context_);
    cq_ = sim::create_cq(context_, static_cast<int>(4 * depth), nullptr, nullptr, 0);
    ibv_qp_init_attr init{};
    init.send_cq = init.recv_cq = cq_;
    init.qp_type = IBV_QPT_RC;
    init.cap.max_send_wr = init.cap.max_recv_wr = depth;
    init.cap.max_send_sge = init.cap.max_recv_sge = 4;
    qp_ = sim::create_qp(pd_, &init);
    CHILD_CHECK(pd_ != nullptr && cq_ != nullptr && qp_ != nullptr);
  }

  ibv_mr* reg(void* addr, std::size_t length) {
    constexpr unsigned kAccess =
        IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
    ibv_mr* mr = sim::reg_mr(pd_, addr, length, reinterpret_cast<uintptr_t>(addr), kAccess);
    CHILD_CHECK(mr != nullptr);
    return mr;
  }
  Card card(ibv_mr* mr) const {
    return Card{lid_, qp_->qp_num, mr != nullptr ? reinterpret_cast<uintptr_t>(mr->addr) : 0,
                mr != nullptr ? mr->rkey : 0};
  }
  void connect(const Card& peer) {
    const testing::RcConnectOptions options{
        .dest_qp_num = peer.qpn, .dlid = peer.lid, .min_rnr_timer = 1, .modify_qp = sim::modify_qp};
    CHILD_CHECK(testing::rc_connect(qp_, options) == 0);
  }

  ibv_pd* pd() const { return pd_; }
  ibv_cq* cq() const { return cq_; }
  ibv_qp* qp() const { return qp_; }

  // The next completion of the member's CQ.
  ibv_wc next() {
    ibv_wc wc{};
    for (int n = 0; n == 0;) {
      n = ibv_poll_cq(cq_, 1, &wc);
      CHILD_CHECK(n >= 0);
    }
    return wc;
  }

  // Posts one signaled WR over `sges` and returns its completion status.
  ibv_wc_status run(ibv_wr_opcode opcode, std::vector<ibv_sge> sges, uint64_t remote_addr,
                    uint32_t rkey) {
    ibv_send_wr wr{};
    wr.wr_id = 42;
    wr.sg_list = sges.data();
    wr.num_sge = static_cast<int>(sges.size());
    wr.opcode = opcode;
    wr.send_flags = IBV_SEND_SIGNALED;
    wr.wr.rdma.remote_addr = remote_addr;
    wr.wr.rdma.rkey = rkey;
    ibv_send_wr* bad = nullptr;
    CHILD_CHECK(ibv_post_send(qp_, &wr, &bad) == 0);
    ibv_wc wc{};
    // An empty poll also runs the virtual clock to a retry that is due.
    for (int n = 0; n == 0;) {
      n = ibv_poll_cq(cq_, 1, &wc);
      CHILD_CHECK(n >= 0);
    }
    return wc.status;
  }

 private:
  ibv_context* context_ = nullptr;
  ibv_pd* pd_ = nullptr;
  ibv_cq* cq_ = nullptr;
  ibv_qp* qp_ = nullptr;
  uint16_t lid_ = 0;
};

}  // namespace verbfault::sim
