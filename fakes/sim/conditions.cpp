// Conditions of the fabric (verbfault/sim/conditions.h): each one changes
// the device's state and raises the events the spec attaches to it.
#include "verbfault/sim/conditions.h"

#include "completion_queue.h"
#include "context.h"
#include "device.h"
#include "fabric.h"
#include "protection_domain.h"
#include "queue_pair.h"
#include "shared_receive_queue.h"
#include "transport.h"
#include "verbfault/sim/provider.h"

#include <algorithm>
#include <cerrno>
#include <mutex>
#include <vector>

namespace verbfault::sim {

namespace {

// Unaffiliated events go to every open context of the device.
void raise_on_device(Device& device, ibv_event_type type, int port) {
  for (Context* context : device.fabric().contexts()) {
    if (&context->device() != &device) continue;
    ibv_async_event event{};
    event.event_type = type;
    event.element.port_num = port;
    context->raise(event);
  }
}

void raise_affiliated(Context& context, ibv_event_type type, void* object) {
  ibv_async_event event{};
  event.event_type = type;
  event.element.qp = static_cast<ibv_qp*>(object);  // the union: any object
  context.raise(event);
}

// QPs sorted by QPN: the order of their events must not depend on pointers.
std::vector<QueuePair*> qps_where(Context& context, auto predicate) {
  std::vector<QueuePair*> out;
  for (auto& [qp, owned] : context.qps)
    if (predicate(*qp)) out.push_back(qp);
  std::sort(out.begin(), out.end(), [](auto* a, auto* b) { return a->qpn() < b->qpn(); });
  return out;
}

}  // namespace

int set_port_state(ibv_context* verbs, uint8_t port, ibv_port_state state) {
  if (!owns(verbs)) return ENODEV;
  if (port != 1 || state < IBV_PORT_DOWN || state > IBV_PORT_ACTIVE_DEFER) return EINVAL;
  auto guard = enter_device();
  Device& device = Context::from(verbs)->device();
  ibv_port_attr& attr = device.port();
  const bool was_active = attr.state == IBV_PORT_ACTIVE;
  attr.state = state;
  attr.phys_state = state == IBV_PORT_ACTIVE ? 5 /* LinkUp */ : 3 /* Disabled */;
  if (was_active && state != IBV_PORT_ACTIVE) raise_on_device(device, IBV_EVENT_PORT_ERR, port);
  if (!was_active && state == IBV_PORT_ACTIVE) raise_on_device(device, IBV_EVENT_PORT_ACTIVE, port);
  return 0;
}

int set_port_lid(ibv_context* verbs, uint8_t port, uint16_t lid) {
  if (!owns(verbs)) return ENODEV;
  // IBA 4.1.3: unicast LIDs are 0x0001..0xbfff.
  if (port != 1 || lid == 0 || lid >= 0xc000) return EINVAL;
  auto guard = enter_device();
  Device& device = Context::from(verbs)->device();
  // IBTA A17.3: a RoCE port has no LID to change.
  if (device.ethernet()) return EINVAL;
  if (device.port().lid == lid) return 0;
  device.port().lid = lid;
  raise_on_device(device, IBV_EVENT_LID_CHANGE, port);
  return 0;
}

int set_gid(ibv_context* verbs, uint8_t port, int index, const ibv_gid& gid) {
  if (!owns(verbs)) return ENODEV;
  auto guard = enter_device();
  Device& device = Context::from(verbs)->device();
  if (port != 1 || index < 0 || index >= device.port().gid_tbl_len) return EINVAL;
  device.set_gid(index, gid);
  raise_on_device(device, IBV_EVENT_GID_CHANGE, port);
  return 0;
}

int device_fatal(ibv_context* verbs) {
  if (!owns(verbs)) return ENODEV;
  auto guard = enter_device();
  Device& device = Context::from(verbs)->device();
  if (device.fatal()) return 0;
  device.set_fatal();
  raise_on_device(device, IBV_EVENT_DEVICE_FATAL, 0);
  // The provider flushes every QP so that no application waits forever for
  // a completion the dead device will never produce.
  for (Context* context : device.fabric().contexts()) {
    if (&context->device() != &device) continue;
    for (QueuePair* qp : qps_where(*context, [](QueuePair& qp) {
           return qp.state() != IBV_QPS_RESET && qp.state() != IBV_QPS_ERR;
         }))
      qp->enter_error();
  }
  return 0;
}

int raise_qp_event(ibv_qp* verbs, ibv_event_type type) {
  if (verbs == nullptr || !owns(verbs->context)) return ENODEV;
  auto guard = enter_device();
  QueuePair* qp = QueuePair::from(verbs);
  switch (type) {
    case IBV_EVENT_QP_FATAL:
    case IBV_EVENT_QP_REQ_ERR:
    case IBV_EVENT_QP_ACCESS_ERR:
      // IBA 11.6.3.1: affiliated errors of a work queue put the QP in ERR.
      raise_affiliated(qp->context(), type, verbs);
      qp->enter_error();
      return 0;
    case IBV_EVENT_PATH_MIG_ERR:
    case IBV_EVENT_PATH_MIG:
    case IBV_EVENT_COMM_EST:
    case IBV_EVENT_SQ_DRAINED:
    case IBV_EVENT_QP_LAST_WQE_REACHED:
      raise_affiliated(qp->context(), type, verbs);
      return 0;
    default:
      return EINVAL;
  }
}

int raise_srq_event(ibv_srq* verbs, ibv_event_type type) {
  if (verbs == nullptr || !owns(verbs->context)) return ENODEV;
  auto guard = enter_device();
  SharedReceiveQueue* srq = SharedReceiveQueue::from(verbs);
  Context& context = srq->pd().context();
  switch (type) {
    case IBV_EVENT_SRQ_ERR:
      // IBA 11.6.3.1 "SRQ catastrophic error": every QP on the SRQ fails.
      raise_affiliated(context, type, verbs);
      for (QueuePair* qp : qps_where(context, [srq](QueuePair& qp) {
             return qp.srq() == srq && qp.state() != IBV_QPS_RESET && qp.state() != IBV_QPS_ERR;
           }))
        qp->enter_error();
      return 0;
    case IBV_EVENT_SRQ_LIMIT_REACHED:
      raise_affiliated(context, type, verbs);
      return 0;
    default:
      return EINVAL;
  }
}

int raise_cq_event(ibv_cq* verbs, ibv_event_type type) {
  if (verbs == nullptr || !owns(verbs->context)) return ENODEV;
  if (type != IBV_EVENT_CQ_ERR) return EINVAL;
  auto guard = enter_device();
  CompletionQueue* cq = CompletionQueue::from(verbs);
  if (!cq->in_error()) completer::cq_error(*cq);
  return 0;
}

int post_send_with_failures(ibv_qp* verbs, ibv_send_wr* wr, ibv_send_wr** bad_wr,
                            const std::vector<SendFailure>& failures) {
  // Nothing posted: *bad_wr names the first WR (ibv_post_send(3)).
  if (verbs == nullptr || !owns(verbs->context)) return *bad_wr = wr, ENODEV;
  auto guard = enter_device();
  if (Context::from(verbs->context)->device().fatal()) return *bad_wr = wr, EIO;
  std::vector<SendWqe::Forced> forced;
  forced.reserve(failures.size());
  for (SendFailure failure : failures)
    forced.push_back(failure == SendFailure::rnr_nak     ? SendWqe::Forced::kRnrNak
                     : failure == SendFailure::no_answer ? SendWqe::Forced::kNoAnswer
                                                         : SendWqe::Forced::kNone);
  return QueuePair::from(verbs)->post_send(wr, bad_wr, &forced);
}

int notify_cq(ibv_cq* verbs) {
  if (verbs == nullptr || !owns(verbs->context)) return ENODEV;
  auto guard = enter_device();
  return CompletionQueue::from(verbs)->fire_spurious_event() ? 0 : EAGAIN;
}

}  // namespace verbfault::sim
