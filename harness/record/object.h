// What every layer below the front door may know of a verbs object: its
// name and slot (object_id.h), the address the application holds, the
// context it belongs to, and for QPs the facts a selector or a check reads
// (type, number, CQs). The interposer's registry creates one per object and
// keeps it in place while the object lives; the engine and the observers
// read it and keep their own per-object state in tables indexed by `slot`.
#pragma once

#include "object_id.h"

#include <infiniband/verbs.h>

#include <cstdint>
#include <string>

namespace verbfault::record {

struct Object {
  ObjectRef ref{};
  std::uint32_t slot = kNoSlot;  // its place in the registry while it lives
  const void* handle = nullptr;  // the address the application holds
  ObjectRef context{};           // the context it belongs to
  const void* context_handle = nullptr;
  std::uint32_t context_slot = kNoSlot;
  bool simulated = false;  // on a simulated device (cause-level faults)
  // Opened or allocated by librdmacm for its own use (a context of every
  // device and a PD each, ucma_init_device), kept until the process ends
  // by design: not the application's to release (resource.leak_at_exit).
  bool kept_by_library = false;
  // Alive in the parent when this process was forked from it: the
  // parent's to release, not this child's (resource.leak_at_exit).
  bool inherited_from_parent = false;
  // QPs.
  ibv_qp_type qp_type{};
  std::uint32_t qp_num = 0;
  ibv_cq* send_cq = nullptr;
  ibv_cq* recv_cq = nullptr;
  // QPs: the rdma_cm id that connected it (rdma_connect / rdma_accept on a
  // simulated CM file, interposer/cm_faults.cpp): its name and its key in
  // the registry; none (nullptr) for a QP connected by hand.
  ObjectRef cm_id{};
  const void* cm_id_handle = nullptr;
  bool cm_disconnected = false;  // the application read that id's DISCONNECTED
  // cm_connect_error fired on that id's CONNECT_RESPONSE: librdmacm's
  // modify of this QP to RTR is to fail (interposer/cm_faults.h).
  bool cm_rtr_fails = false;
  // QPs and SRQs: the SGE limits the provider gave at creation
  // (ibv_create_qp(3) updates cap; an SRQ's max_sge is its max_recv_sge).
  std::uint32_t max_send_sge = 0;
  std::uint32_t max_recv_sge = 0;

  ObjectId id() const { return {slot, ref}; }
  // How many entries of a WR's sg_list the harness may read: none when
  // num_sge exceeds this queue's limit or there is no list (the provider
  // refuses such a WR, ibv_post_send(3) EINVAL; its array may be shorter
  // than num_sge says, so nothing of it is read before that check).
  int readable_sges(int num_sge, const ibv_sge* sg_list, bool send) const {
    const std::uint32_t limit = send ? max_send_sge : max_recv_sge;
    if (num_sge <= 0 || sg_list == nullptr || static_cast<std::uint32_t>(num_sge) > limit) return 0;
    return num_sge;
  }
  std::string name() const { return to_string(ref); }
};

}  // namespace verbfault::record
