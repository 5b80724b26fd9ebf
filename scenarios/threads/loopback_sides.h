// Two sides of one process connected in loopback on the first device, as
// the threaded programs of scenarios/threads use them: a client, whose
// receives complete into a CQ that reports to a completion channel, and a
// peer, polled without one. Each side's sends complete into its receive CQ
// or, with `separate_sends`, into a CQ of their own (reaped as the side
// sends more). Plain libibverbs: any RC-capable device, real or simulated.
#pragma once

#include "loopback_pair.h"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <initializer_list>

namespace threads {

using field_failures::fail;

inline constexpr uint32_t kMessage = 64;
inline constexpr uint32_t kDepth = 8;
inline constexpr int kReceiveSlots = 3;

struct Side {
  ibv_cq* cq = nullptr;       // receives (and sends, unless separate)
  ibv_cq* send_cq = nullptr;  // sends: `cq`, or a CQ of their own
  ibv_qp* qp = nullptr;
  ibv_mr* mr = nullptr;
  // [0, kMessage): what the side sends; then one slot per receive.
  char buffer[(1 + kReceiveSlots) * kMessage] = {};

  // A receive into slot `slot` (its wr_id).
  void post_receive(int slot = 0) {
    ibv_sge sge{reinterpret_cast<uintptr_t>(buffer + kMessage * (1 + slot)), kMessage, mr->lkey};
    ibv_recv_wr wr{};
    wr.wr_id = static_cast<uint64_t>(slot);
    wr.sg_list = &sge;
    wr.num_sge = 1;
    ibv_recv_wr* bad = nullptr;
    if (int err = ibv_post_recv(qp, &wr, &bad)) fail("ibv_post_recv", err);
  }

  // A signaled SEND of `value`; with sends of their own CQ, those done so
  // far are reaped first, which frees their slots.
  void post_send(uint32_t value) {
    if (send_cq != cq) {
      ibv_wc done[kDepth];
      int reaped = 0;
      while ((reaped = ibv_poll_cq(send_cq, kDepth, done)) > 0)
        for (int i = 0; i < reaped; ++i)
          if (done[i].status != IBV_WC_SUCCESS) fail("a send", EIO);
    }
    std::memcpy(buffer, &value, sizeof value);
    ibv_sge sge{reinterpret_cast<uintptr_t>(buffer), kMessage, mr->lkey};
    ibv_send_wr wr{};
    wr.wr_id = kReceiveSlots;  // apart from the receives' slots
    wr.sg_list = &sge;
    wr.num_sge = 1;
    wr.opcode = IBV_WR_SEND;
    wr.send_flags = IBV_SEND_SIGNALED;
    ibv_send_wr* bad = nullptr;
    if (int err = ibv_post_send(qp, &wr, &bad)) fail("ibv_post_send", err);
  }

  // What the receive into slot `slot` brought.
  uint32_t received(int slot = 0) const {
    uint32_t value;
    std::memcpy(&value, buffer + kMessage * (1 + slot), sizeof value);
    return value;
  }
};

// A completion that is not a success ends the program: "PROGRAM:
// completion wr_id N: STATUS", exit status 1.
inline void check(const ibv_wc& wc) {
  if (wc.status == IBV_WC_SUCCESS) return;
  std::fprintf(stderr, "%s: completion wr_id %llu: %s\n", program_invocation_short_name,
               static_cast<unsigned long long>(wc.wr_id), ibv_wc_status_str(wc.status));
  std::exit(1);
}

struct LoopbackSides {
  ibv_context* ctx = nullptr;
  ibv_pd* pd = nullptr;
  ibv_comp_channel* channel = nullptr;  // the client's receive CQ reports here
  Side client, peer;

  explicit LoopbackSides(bool separate_sends) {
    using field_failures::Pair;
    ctx = Pair::open_first_device();
    pd = ibv_alloc_pd(ctx);
    channel = ibv_create_comp_channel(ctx);
    if (pd == nullptr || channel == nullptr) fail("setup", errno);
    // The receive CQs first (cq#0 the client's, cq#1 the peer's), then
    // the sends' own.
    for (Side* side : {&client, &peer})
      side->cq = ibv_create_cq(ctx, 16, nullptr, side == &client ? channel : nullptr, 0);
    for (Side* side : {&client, &peer})
      side->send_cq = separate_sends ? ibv_create_cq(ctx, 16, nullptr, nullptr, 0) : side->cq;
    for (Side* side : {&client, &peer}) {
      if (side->cq == nullptr || side->send_cq == nullptr) fail("ibv_create_cq", errno);
      side->qp = Pair::make_qp(pd, side->send_cq, side->cq, kDepth);
      side->mr = ibv_reg_mr(pd, side->buffer, sizeof side->buffer, IBV_ACCESS_LOCAL_WRITE);
      if (side->mr == nullptr) fail("ibv_reg_mr", errno);
    }
    Pair::connect_to_each_other(ctx, client.qp, peer.qp);
  }

  ~LoopbackSides() {
    for (Side* side : {&client, &peer}) {
      ibv_destroy_qp(side->qp);
      ibv_dereg_mr(side->mr);
      if (side->send_cq != side->cq) ibv_destroy_cq(side->send_cq);
      ibv_destroy_cq(side->cq);
    }
    ibv_destroy_comp_channel(channel);
    ibv_dealloc_pd(pd);
    ibv_close_device(ctx);
  }

  LoopbackSides(const LoopbackSides&) = delete;
  LoopbackSides& operator=(const LoopbackSides&) = delete;
};

}  // namespace threads
