// A connected RC pair on the provider double's device vfreal0: a REAL
// provider as far as the front door can tell (the double stands in for
// libibverbs.so.1, see fakes/provider_double/CMakeLists.txt), so every call
// takes the front door's real path and faults are injected at effect level.
// Built inside a verbfault::Session so that the objects get the names the
// rules use:
//   context#0, pd#0, channel#0 (with_channel), cq#0 (side a), cq#1 (side b),
//   qp#0 (a), qp#1 (b), mr#0 (a's buffer), mr#1 (b's buffer).
// Drives everything through <infiniband/verbs.h> only. The test binary is
// run with LD_LIBRARY_PATH=<the double's directory> and
// VERBFAULT_SIM_DEVICES=0 (the front door lists no simulated device).
#pragma once

#include "verbfault/session.h"

#include <infiniband/verbs.h>
#include <verbfault_testing/rc_connect.h>

#include <fcntl.h>
#include <poll.h>

#include <gtest/gtest.h>

#include <cerrno>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace verbfault::testing {

inline constexpr const char* kDoubleDevice = "vfreal0";

// poll(2) on a descriptor: true when it reports POLLIN within timeout_ms.
inline bool readable(int fd, int timeout_ms = 0) {
  pollfd p{fd, POLLIN, 0};
  return ::poll(&p, 1, timeout_ms) == 1 && (p.revents & POLLIN) != 0;
}

inline void set_nonblocking(int fd, bool on = true) {
  const int flags = fcntl(fd, F_GETFL);
  ASSERT_GE(flags, 0);
  ASSERT_EQ(fcntl(fd, F_SETFL, on ? flags | O_NONBLOCK : flags & ~O_NONBLOCK), 0);
}

// One async event taken with ibv_get_async_event(3), not yet acknowledged.
struct AsyncEvent {
  bool got = false;
  int error = 0;  // errno when none was taken
  ibv_async_event event{};
};

// Takes the next async event of `ctx` in non-blocking mode (the async fd is
// switched to O_NONBLOCK); the caller acknowledges it.
inline AsyncEvent take_async(ibv_context* ctx) {
  set_nonblocking(ctx->async_fd);
  AsyncEvent out;
  errno = 0;
  if (ibv_get_async_event(ctx, &out.event) == 0)
    out.got = true;
  else
    out.error = errno;
  return out;
}

class DoublePair : public ::testing::Test {
 protected:
  void SetUp() override {}  // begin() builds everything, inside the session

  void TearDown() override {
    // Everything still alive is destroyed in order, then the context is
    // closed, inside the session.
    auto check = [](int result, const char* call) { EXPECT_EQ(result, 0) << call; };
    if (a_ != nullptr) check(ibv_destroy_qp(a_), "destroy_qp(qp#0)");
    if (b_ != nullptr) check(ibv_destroy_qp(b_), "destroy_qp(qp#1)");
    if (cq_a_ != nullptr) check(ibv_destroy_cq(cq_a_), "destroy_cq(cq#0)");
    if (cq_b_ != nullptr) check(ibv_destroy_cq(cq_b_), "destroy_cq(cq#1)");
    if (channel_ != nullptr) check(ibv_destroy_comp_channel(channel_), "destroy_comp_channel");
    if (mr_a_ != nullptr) check(ibv_dereg_mr(mr_a_), "dereg_mr(mr#0)");
    if (mr_b_ != nullptr) check(ibv_dereg_mr(mr_b_), "dereg_mr(mr#1)");
    if (pd_ != nullptr) check(ibv_dealloc_pd(pd_), "dealloc_pd");
    if (ctx_ != nullptr) check(ibv_close_device(ctx_), "close_device");
    if (list_ != nullptr) ibv_free_device_list(list_);
    session_.reset();
  }

  // Opens the session, then vfreal0, and builds the pair.
  void begin(const std::string& rules, std::uint64_t seed = 1, bool with_channel = false) {
    session_ = std::make_unique<Session>(parse_rules(rules, "test"), seed);
    open_device();
    if (HasFatalFailure()) return;
    if (with_channel) {
      channel_ = ibv_create_comp_channel(ctx_);
      ASSERT_NE(channel_, nullptr);
    }
    build_pair();
  }

  void open_device() {
    int n = 0;
    list_ = ibv_get_device_list(&n);
    ASSERT_NE(list_, nullptr);
    ibv_device* device = nullptr;
    for (int i = 0; i < n; ++i)
      if (std::string(ibv_get_device_name(list_[i])) == kDoubleDevice) device = list_[i];
    ASSERT_NE(device, nullptr) << kDoubleDevice
                               << " not listed: run with LD_LIBRARY_PATH=" PROVIDER_DOUBLE_DIR;
    ctx_ = ibv_open_device(device);
    ASSERT_NE(ctx_, nullptr);
    pd_ = ibv_alloc_pd(ctx_);
    ASSERT_NE(pd_, nullptr);
  }

  ibv_qp* create_qp(ibv_cq* send_cq, ibv_cq* recv_cq, uint32_t depth = 16) {
    ibv_qp_init_attr init{};
    init.send_cq = send_cq;
    init.recv_cq = recv_cq;
    init.qp_type = IBV_QPT_RC;
    init.cap.max_send_wr = depth;
    init.cap.max_recv_wr = depth;
    init.cap.max_send_sge = 4;
    init.cap.max_recv_sge = 4;
    init.cap.max_inline_data = 64;
    return ibv_create_qp(pd_, &init);
  }

  uint16_t lid() {
    ibv_port_attr port{};
    EXPECT_EQ(ibv_query_port(ctx_, 1, &port), 0);
    return port.lid;
  }

  // QPs are connected with rc_connect (<verbfault_testing/rc_connect.h>).

  // cq#0/cq#1 (reporting to channel_, cq_contexts &tag_a_/&tag_b_), qp#0 on
  // cq#0 and qp#1 on cq#1 connected to each other, mr#0 and mr#1.
  void build_pair() {
    cq_a_ = ibv_create_cq(ctx_, 64, &tag_a_, channel_, 0);
    cq_b_ = ibv_create_cq(ctx_, 64, &tag_b_, channel_, 0);
    ASSERT_NE(cq_a_, nullptr);
    ASSERT_NE(cq_b_, nullptr);
    a_ = create_qp(cq_a_, cq_a_);
    b_ = create_qp(cq_b_, cq_b_);
    ASSERT_NE(a_, nullptr);
    ASSERT_NE(b_, nullptr);
    ASSERT_EQ(rc_connect(a_, {.dest_qp_num = b_->qp_num, .dlid = lid()}), 0);
    ASSERT_EQ(rc_connect(b_, {.dest_qp_num = a_->qp_num, .dlid = lid()}), 0);
    const int access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
                       IBV_ACCESS_REMOTE_ATOMIC;
    mr_a_ = ibv_reg_mr(pd_, buf_a_, sizeof buf_a_, access);
    mr_b_ = ibv_reg_mr(pd_, buf_b_, sizeof buf_b_, access);
    ASSERT_NE(mr_a_, nullptr);
    ASSERT_NE(mr_b_, nullptr);
  }

  // Destroys what a test tears down itself (TearDown skips it then).
  int destroy_qp_a() {
    const int result = ibv_destroy_qp(a_);
    if (result == 0) a_ = nullptr;
    return result;
  }
  int destroy_cq_a() {
    const int result = ibv_destroy_cq(cq_a_);
    if (result == 0) cq_a_ = nullptr;
    return result;
  }

  static int post_send(ibv_qp* qp, ibv_wr_opcode opcode, uint64_t wr_id, ibv_mr* mr, void* buf,
                       uint32_t len, unsigned flags = IBV_SEND_SIGNALED, uint64_t remote_addr = 0,
                       uint32_t rkey = 0) {
    ibv_sge sge{reinterpret_cast<uintptr_t>(buf), len, mr->lkey};
    ibv_send_wr wr{};
    wr.wr_id = wr_id;
    wr.sg_list = &sge;
    wr.num_sge = 1;
    wr.opcode = opcode;
    wr.send_flags = flags;
    wr.wr.rdma.remote_addr = remote_addr;
    wr.wr.rdma.rkey = rkey;
    ibv_send_wr* bad = nullptr;
    return ibv_post_send(qp, &wr, &bad);
  }

  static int post_recv(ibv_qp* qp, uint64_t wr_id, ibv_mr* mr, void* buf, uint32_t len) {
    ibv_sge sge{reinterpret_cast<uintptr_t>(buf), len, mr->lkey};
    ibv_recv_wr wr{};
    wr.wr_id = wr_id;
    wr.sg_list = &sge;
    wr.num_sge = 1;
    ibv_recv_wr* bad = nullptr;
    return ibv_post_recv(qp, &wr, &bad);
  }

  // A signaled SEND of 8 bytes from a to b; a receive of 64 bytes on b.
  int send_a_to_b(uint64_t wr_id, unsigned flags = IBV_SEND_SIGNALED) {
    return post_send(a_, IBV_WR_SEND, wr_id, mr_a_, buf_a_, 8, flags);
  }
  int recv_on_b(uint64_t wr_id) { return post_recv(b_, wr_id, mr_b_, buf_b_, 64); }

  // An 8-byte RDMA WRITE from a to b: one completion on cq#0, none on cq#1.
  int write_a_to_b(uint64_t wr_id, unsigned flags = IBV_SEND_SIGNALED) {
    return post_send(a_, IBV_WR_RDMA_WRITE, wr_id, mr_a_, buf_a_, 8, flags,
                     reinterpret_cast<uintptr_t>(buf_b_), mr_b_->rkey);
  }

  static ibv_qp_state state_of(ibv_qp* qp) {
    ibv_qp_attr attr{};
    ibv_qp_init_attr init{};
    EXPECT_EQ(ibv_query_qp(qp, &attr, IBV_QP_STATE, &init), 0);
    return attr.qp_state;
  }

  // Polls until `count` completions arrived or `max_polls` polls were made.
  static std::vector<ibv_wc> poll(ibv_cq* cq, size_t count, int max_polls = 1000) {
    std::vector<ibv_wc> out;
    for (int i = 0; i < max_polls && out.size() < count; ++i) {
      ibv_wc wc[16];
      int n = ibv_poll_cq(cq, 16, wc);
      EXPECT_GE(n, 0);
      if (n < 0) break;
      out.insert(out.end(), wc, wc + n);
    }
    return out;
  }

  // One completion event taken in non-blocking mode (the channel fd is
  // switched to O_NONBLOCK): the CQ it names, or nullptr with errno set.
  ibv_cq* try_get_event(void** context_out = nullptr) {
    set_nonblocking(channel_->fd);
    ibv_cq* cq = nullptr;
    void* context = nullptr;
    errno = 0;
    if (ibv_get_cq_event(channel_, &cq, &context) != 0) return nullptr;
    if (context_out != nullptr) *context_out = context;
    return cq;
  }

  // The number of trace records that contain `text`.
  size_t records_with(const std::string& text) const {
    size_t n = 0;
    for (const std::string& record : session_->trace())
      if (record.find(text) != std::string::npos) ++n;
    return n;
  }
  // The trace record of rule `rule` firing `fault` at effect level.
  size_t effect_records(const std::string& fault, int rule = 0) const {
    return records_with("\"fault\":\"" + fault + "\",\"rule\":" + std::to_string(rule) +
                        ",\"level\":\"effect\"");
  }

  std::unique_ptr<Session> session_;
  ibv_device** list_ = nullptr;
  ibv_context* ctx_ = nullptr;
  ibv_pd* pd_ = nullptr;
  ibv_comp_channel* channel_ = nullptr;
  ibv_cq* cq_a_ = nullptr;
  ibv_cq* cq_b_ = nullptr;
  ibv_qp* a_ = nullptr;
  ibv_qp* b_ = nullptr;
  alignas(64) uint8_t buf_a_[4096] = {};
  alignas(64) uint8_t buf_b_[4096] = {};
  ibv_mr* mr_a_ = nullptr;
  ibv_mr* mr_b_ = nullptr;
  int tag_a_ = 0;  // the cq_context of cq_a_ is &tag_a_
  int tag_b_ = 0;
};

}  // namespace verbfault::testing
