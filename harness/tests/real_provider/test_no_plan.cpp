// No plan, no change: the same traffic gives the same completions, byte for
// byte, whether the application calls the provider double directly (no
// front door, no interposer: the provider's own ops), goes through the
// front door outside any Session (interposer inactive), or inside a Session
// with an empty plan (every trampoline and hook runs).
#include "double_fixture.h"

#include <dlfcn.h>

#include <cstring>
#include <functional>

namespace verbfault::testing {
namespace {

// The exported calls the traffic needs, from one library or the other.
struct Verbs {
  decltype(&ibv_get_device_list) get_device_list;
  decltype(&ibv_free_device_list) free_device_list;
  decltype(&ibv_get_device_name) get_device_name;
  decltype(&ibv_open_device) open_device;
  decltype(&ibv_close_device) close_device;
  decltype(&ibv_alloc_pd) alloc_pd;
  decltype(&ibv_dealloc_pd) dealloc_pd;
  decltype(&ibv_reg_mr) reg_mr;
  decltype(&ibv_dereg_mr) dereg_mr;
  decltype(&ibv_create_cq) create_cq;
  decltype(&ibv_destroy_cq) destroy_cq;
  decltype(&ibv_create_qp) create_qp;
  decltype(&ibv_modify_qp) modify_qp;
  decltype(&ibv_destroy_qp) destroy_qp;
};

// What the process binds to: the front door.
Verbs front_door() {
  return {&ibv_get_device_list, &ibv_free_device_list, &ibv_get_device_name, &ibv_open_device,
          &ibv_close_device,    &ibv_alloc_pd,         &ibv_dealloc_pd,      &ibv_reg_mr,
          &ibv_dereg_mr,        &ibv_create_cq,        &ibv_destroy_cq,      &ibv_create_qp,
          &ibv_modify_qp,       &ibv_destroy_qp};
}

// The provider double itself, past the front door.
template <class Fn>
void bind(Fn*& fn, void* handle, const char* name, const char* version = "IBVERBS_1.1") {
  fn = reinterpret_cast<Fn*>(dlvsym(handle, name, version));
  ASSERT_NE(fn, nullptr) << name;
}

Verbs provider(void* handle) {
  Verbs v{};
  bind(v.get_device_list, handle, "ibv_get_device_list");
  bind(v.free_device_list, handle, "ibv_free_device_list");
  bind(v.get_device_name, handle, "ibv_get_device_name");
  bind(v.open_device, handle, "ibv_open_device");
  bind(v.close_device, handle, "ibv_close_device");
  bind(v.alloc_pd, handle, "ibv_alloc_pd");
  bind(v.dealloc_pd, handle, "ibv_dealloc_pd");
  bind(v.reg_mr, handle, "ibv_reg_mr");
  bind(v.dereg_mr, handle, "ibv_dereg_mr");
  bind(v.create_cq, handle, "ibv_create_cq");
  bind(v.destroy_cq, handle, "ibv_destroy_cq");
  bind(v.create_qp, handle, "ibv_create_qp");
  bind(v.modify_qp, handle, "ibv_modify_qp");
  bind(v.destroy_qp, handle, "ibv_destroy_qp");
  return v;
}

// What the application observed: every completion (QP numbers replaced by
// 'a'/'b', the only fields that differ between two pairs) and the buffers.
struct Observed {
  std::vector<ibv_wc> completions;
  std::vector<uint8_t> buffers;
};

uint32_t stable_qpn(uint32_t qpn, uint32_t a, uint32_t b) {
  return qpn == a ? 'a' : qpn == b ? 'b' : qpn;
}

// A pair on vfreal0 through `v`, and traffic covering successful SEND,
// SEND_WITH_IMM, RDMA WRITE/READ, unsignaled WRs reclaimed by a signaled
// one, an error completion (receive buffer too small) and the flushes
// behind it.
void run_traffic(const Verbs& v, Observed& out) {
  int n = 0;
  ibv_device** list = v.get_device_list(&n);
  ASSERT_NE(list, nullptr);
  ibv_device* device = nullptr;
  for (int i = 0; i < n; ++i)
    if (std::string(v.get_device_name(list[i])) == kDoubleDevice) device = list[i];
  ASSERT_NE(device, nullptr);
  ibv_context* ctx = v.open_device(device);
  ASSERT_NE(ctx, nullptr);
  ibv_pd* pd = v.alloc_pd(ctx);
  ASSERT_NE(pd, nullptr);
  ibv_cq* cq_a = v.create_cq(ctx, 64, nullptr, nullptr, 0);
  ibv_cq* cq_b = v.create_cq(ctx, 64, nullptr, nullptr, 0);
  ASSERT_NE(cq_a, nullptr);
  ASSERT_NE(cq_b, nullptr);
  auto make_qp = [&](ibv_cq* cq) {
    ibv_qp_init_attr init{};
    init.send_cq = init.recv_cq = cq;
    init.qp_type = IBV_QPT_RC;
    init.cap = {16, 16, 4, 4, 64};
    return v.create_qp(pd, &init);
  };
  ibv_qp* a = make_qp(cq_a);
  ibv_qp* b = make_qp(cq_b);
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  ibv_port_attr port{};
  ASSERT_EQ(ibv_query_port(ctx, 1, &port), 0);
  // Through `v` too: the provider's own ibv_modify_qp when the front door is left out.
  auto connect = [&](ibv_qp* qp, ibv_qp* remote) {
    return rc_connect(qp, {.dest_qp_num = remote->qp_num,
                           .dlid = port.lid,
                           .access = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ,
                           .modify_qp = v.modify_qp});
  };
  ASSERT_EQ(connect(a, b), 0);
  ASSERT_EQ(connect(b, a), 0);
  alignas(64) static uint8_t buf_a[4096];
  alignas(64) static uint8_t buf_b[4096];
  for (size_t i = 0; i < sizeof buf_a; ++i) {
    buf_a[i] = static_cast<uint8_t>(i * 7);
    buf_b[i] = static_cast<uint8_t>(i * 13);
  }
  const int access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
  ibv_mr* mr_a = v.reg_mr(pd, buf_a, sizeof buf_a, access);
  ibv_mr* mr_b = v.reg_mr(pd, buf_b, sizeof buf_b, access);
  ASSERT_NE(mr_a, nullptr);
  ASSERT_NE(mr_b, nullptr);

  auto send = [&](uint64_t wr_id, ibv_wr_opcode opcode, uint32_t offset, uint32_t len,
                  unsigned flags, uint64_t remote = 0) {
    ibv_sge sge{reinterpret_cast<uintptr_t>(buf_a + offset), len, mr_a->lkey};
    ibv_send_wr wr{};
    wr.wr_id = wr_id;
    wr.sg_list = &sge;
    wr.num_sge = 1;
    wr.opcode = opcode;
    wr.send_flags = flags;
    wr.imm_data = htobe32(0x1234);
    wr.wr.rdma.remote_addr = remote;
    wr.wr.rdma.rkey = mr_b->rkey;
    ibv_send_wr* bad = nullptr;
    return ibv_post_send(a, &wr, &bad);
  };
  auto recv = [&](uint64_t wr_id, uint32_t offset, uint32_t len) {
    ibv_sge sge{reinterpret_cast<uintptr_t>(buf_b + offset), len, mr_b->lkey};
    ibv_recv_wr wr{};
    wr.wr_id = wr_id;
    wr.sg_list = &sge;
    wr.num_sge = 1;
    ibv_recv_wr* bad = nullptr;
    return ibv_post_recv(b, &wr, &bad);
  };
  auto drain = [&](ibv_cq* cq) {
    for (int polls = 0; polls < 50; ++polls) {
      ibv_wc wc[4];
      std::memset(wc, 0x5a, sizeof wc);  // what the provider leaves alone shows too
      const int got = ibv_poll_cq(cq, 4, wc);
      ASSERT_GE(got, 0);
      for (int i = 0; i < got; ++i) {
        wc[i].qp_num = stable_qpn(wc[i].qp_num, a->qp_num, b->qp_num);
        if (wc[i].status == IBV_WC_SUCCESS)
          wc[i].src_qp = stable_qpn(wc[i].src_qp, a->qp_num, b->qp_num);
        out.completions.push_back(wc[i]);
      }
    }
  };
  const uintptr_t remote = reinterpret_cast<uintptr_t>(buf_b);
  for (uint64_t i = 0; i < 4; ++i) ASSERT_EQ(recv(100 + i, 64 * i, 64), 0);
  ASSERT_EQ(send(1, IBV_WR_SEND, 0, 16, IBV_SEND_SIGNALED), 0);
  ASSERT_EQ(send(2, IBV_WR_SEND_WITH_IMM, 16, 32, IBV_SEND_SIGNALED | IBV_SEND_SOLICITED), 0);
  ASSERT_EQ(send(3, IBV_WR_RDMA_WRITE, 64, 128, 0, remote + 1024), 0);  // unsignaled
  ASSERT_EQ(send(4, IBV_WR_RDMA_READ, 256, 64, IBV_SEND_SIGNALED, remote + 2048), 0);
  drain(cq_a);
  drain(cq_b);
  // A SEND bigger than the receive buffer: remote invalid request at a,
  // local length error at b, both QPs to ERR, the rest flushed.
  ASSERT_EQ(send(5, IBV_WR_SEND, 0, 512, IBV_SEND_SIGNALED), 0);
  ASSERT_EQ(send(6, IBV_WR_SEND, 0, 8, IBV_SEND_SIGNALED), 0);
  drain(cq_a);
  drain(cq_b);
  out.buffers.assign(buf_a, buf_a + sizeof buf_a);
  out.buffers.insert(out.buffers.end(), buf_b, buf_b + sizeof buf_b);

  EXPECT_EQ(v.destroy_qp(a), 0);
  EXPECT_EQ(v.destroy_qp(b), 0);
  EXPECT_EQ(v.destroy_cq(cq_a), 0);
  EXPECT_EQ(v.destroy_cq(cq_b), 0);
  EXPECT_EQ(v.dereg_mr(mr_a), 0);
  EXPECT_EQ(v.dereg_mr(mr_b), 0);
  EXPECT_EQ(v.dealloc_pd(pd), 0);
  EXPECT_EQ(v.close_device(ctx), 0);
  v.free_device_list(list);
}

void expect_same(const Observed& expected, const Observed& actual, const char* what) {
  ASSERT_EQ(actual.completions.size(), expected.completions.size()) << what;
  for (size_t i = 0; i < expected.completions.size(); ++i)
    EXPECT_EQ(std::memcmp(&actual.completions[i], &expected.completions[i], sizeof(ibv_wc)), 0)
        << what << ": completion " << i << " (wr_id " << expected.completions[i].wr_id << ")";
  EXPECT_TRUE(actual.buffers == expected.buffers) << what << ": buffer contents differ";
}

TEST(NoPlan, TheFrontDoorGivesTheProvidersCompletionsByteForByte) {
  void* handle = dlopen("libibverbs.so.1", RTLD_NOW | RTLD_NOLOAD);
  ASSERT_NE(handle, nullptr);
  Verbs direct{};
  ASSERT_NO_FATAL_FAILURE(direct = provider(handle));

  Observed by_provider;
  ASSERT_NO_FATAL_FAILURE(run_traffic(direct, by_provider));
  // The traffic covered successes, an error and flushes.
  ASSERT_EQ(by_provider.completions.size(), 9u);
  EXPECT_EQ(by_provider.completions[5].status, IBV_WC_REM_INV_REQ_ERR);
  EXPECT_EQ(by_provider.completions[7].status, IBV_WC_LOC_LEN_ERR);

  Observed outside_session;
  ASSERT_NO_FATAL_FAILURE(run_traffic(front_door(), outside_session));
  expect_same(by_provider, outside_session, "front door, no Session");

  Observed empty_session;
  {
    Session session(Plan{}, 7);
    ASSERT_NO_FATAL_FAILURE(run_traffic(front_door(), empty_session));
    size_t polls = 0;
    for (const std::string& record : session.trace())
      if (record.find("\"call\":\"poll_cq\"") != std::string::npos) ++polls;
    EXPECT_GT(polls, 0u) << "the interposer saw the traffic";
  }
  expect_same(by_provider, empty_session, "front door, empty Session");
  dlclose(handle);
}

}  // namespace
}  // namespace verbfault::testing
