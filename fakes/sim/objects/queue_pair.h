// ibv_qp: a queue pair, its state machine and its work queues.
#pragma once

#include "handle.h"
#include "multicast.h"
#include "receive_queue.h"
#include "ring.h"
#include "work_request.h"

#include <infiniband/verbs.h>

#include <cstdint>
#include <deque>
#include <vector>

namespace verbfault::sim {

class Fabric;

class CompletionQueue;
class Context;
class ProtectionDomain;
class SharedReceiveQueue;

// Guarded by Fabric::mutex. The transport (requester.cpp, responder.cpp,
// completer.cpp) moves WQEs through it; this class keeps the state and
// the queues.
class QueuePair {
 public:
  QueuePair(ProtectionDomain& pd, const ibv_qp_init_attr& init, uint32_t qpn);

  ibv_qp* verbs() { return &handle_.verbs.qp_base; }
  static QueuePair* from(ibv_qp* qp) { return owner_of<QueuePair, ibv_qp_ex>(qp); }

  ProtectionDomain& pd() { return pd_; }
  Context& context();
  // Its context's fabric (Context::fabric).
  Fabric& fabric();
  uint32_t qpn() const { return qpn_; }
  ibv_qp_type type() const { return type_; }
  ibv_qp_state state() const { return attr_.qp_state; }
  const ibv_qp_attr& attr() const { return attr_; }
  const ibv_qp_init_attr& init_attr() const { return init_; }
  CompletionQueue& send_cq() { return *send_cq_; }
  CompletionQueue& recv_cq() { return *recv_cq_; }
  SharedReceiveQueue* srq() { return srq_; }

  int modify(const ibv_qp_attr& attr, int mask);
  // Moves to ERR without a modify_qp (an error completion, a fatal event).
  void enter_error();
  // A send WR completed in error: an RC QP moves to ERR; a UC or UD QP in
  // RTS or SQD to SQE (IBA 10.3.1, "Send Queue Error": every QP type but
  // RC has the state), its send queue flushed and its receive queue going
  // on (C10-38); modify_qp SQE -> RTS resumes it.
  void send_queue_failed();

  // `forced[i]`, when given, is brought about for the i-th WR of the list.
  int post_send(ibv_send_wr* wr, ibv_send_wr** bad_wr,
                const std::vector<SendWqe::Forced>* forced = nullptr);
  // What post_send would fail the list with (0: every WR would be posted),
  // without posting anything: ibv_wr_complete posts all or nothing.
  int check_send_list(const ibv_send_wr* list);
  int post_recv(ibv_recv_wr* wr, ibv_recv_wr** bad_wr);

  // Send queue: WQEs not yet completed, oldest first.
  Ring<SendWqe>& send_queue() { return sq_; }
  Ring<RecvWqe>& recv_queue() { return rq_.wqes(); }
  // Slot accounting (ibv_post_send(3) ENOMEM when the queue is full): a
  // send slot is free once a completion of it or of a later WR of the same
  // queue has been polled; a receive slot once its completion is polled.
  void release_send_slots(uint64_t upto_seq) {
    if (upto_seq + 1 > sq_released_) sq_released_ = upto_seq + 1;
  }
  void release_recv_slot() { rq_.release_slot(); }
  uint64_t next_send_seq() const { return sq_next_seq_; }

  // Packet sequence numbers of requests to and from another process of the
  // local fabric (IBA 9.7.1; one PSN per WQE: a message is one packet
  // here): the next one this QP sends (from sq_psn) and the next one its
  // responder accepts (from rq_psn). Guarded by Fabric::mutex.
  uint32_t next_psn = 0;
  uint32_t expected_psn = 0;
  // Answers of another process to this QP's requests held in its send CQ
  // (delivery.h): later answers queue behind them, in order.
  uint32_t held_answers = 0;

  // IBV_EVENT_COMM_EST is raised once, for the first message received in RTR.
  bool communication_established = false;
  // IBV_EVENT_QP_LAST_WQE_REACHED is raised once per entry into ERR.
  bool last_wqe_reached = false;
  uint32_t events_reported = 0;  // async events handed out for this QP
  uint32_t creation_index = 0;   // "qp#2" is the third QP the process created
  // ibv_create_qp_ex with IBV_QP_INIT_ATTR_SEND_OPS_FLAGS: the ibv_wr_*
  // operations it allows (0: ibv_qp_to_qp_ex gives NULL), and the batch
  // being built.
  uint64_t send_ops_flags = 0;
  WrBatch wr_batch;
  // The multicast groups the QP is attached to (multicast.h).
  std::vector<multicast::Group> multicast_groups;
  ibv_qp_ex* verbs_ex() { return &handle_.verbs; }

 private:
  int check_send_wr(const ibv_send_wr& wr);
  void apply(const ibv_qp_attr& attr, int mask);

  Handle<ibv_qp_ex, QueuePair> handle_;
  ProtectionDomain& pd_;
  ibv_qp_init_attr init_;
  uint32_t qpn_;
  ibv_qp_type type_;
  CompletionQueue* send_cq_;
  CompletionQueue* recv_cq_;
  SharedReceiveQueue* srq_;
  ibv_qp_attr attr_{};
  Ring<SendWqe> sq_;
  ReceiveQueue rq_;
  uint64_t sq_next_seq_ = 0;
  uint64_t sq_released_ = 0;
};

}  // namespace verbfault::sim
