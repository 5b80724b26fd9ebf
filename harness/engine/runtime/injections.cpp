// Injecting the faults that are not rewrites of what a call returns: on a
// simulated device the device itself is brought into the condition (cause
// level: it produces the whole chain of consequences); on a real provider
// the interposer drives the provider through its own verbs (effect level).
#include "injections.h"

#include "async_event.h"

#include "conditions.h"
#include "verbs.h"

#include <cstdio>
#include <mutex>

namespace verbfault::engine::inject {

void qp_to_error(ibv_qp* qp) {
  ibv_qp_attr attr{};
  attr.qp_state = IBV_QPS_ERR;
  // Every state may go to ERR (ibv_modify_qp(3)); a failure means the QP is
  // being destroyed, and then there is nothing left to flush.
  (void)provider::modify_qp(qp, &attr, IBV_QP_STATE);
}

namespace {

// Queues an injected async event on a real context's wrapped fd (lock held).
void queue_async(FaultEngine& engine, const void* context, ibv_event_type type, const void* element,
                 std::uint8_t port) {
  ObjectFaults* tracked = engine.find(context);
  if (tracked == nullptr || !tracked->events.wrapped()) return;
  ibv_async_event event{};
  event.event_type = type;
  switch (record::element_kind(type)) {
    case ObjectKind::qp:
      event.element.qp = static_cast<ibv_qp*>(const_cast<void*>(element));
      break;
    case ObjectKind::srq:
      event.element.srq = static_cast<ibv_srq*>(const_cast<void*>(element));
      break;
    case ObjectKind::cq:
      event.element.cq = static_cast<ibv_cq*>(const_cast<void*>(element));
      break;
    default:
      event.element.port_num = port;
  }
  tracked->injected_async.push_back(event);
  tracked->events.signal();
}

// The QPs that complete into `cq` (lock held).
std::vector<ibv_qp*> qps_on(FaultEngine& engine, const ibv_cq* cq) {
  std::vector<ibv_qp*> qps;
  for (const record::Object* qp : engine.live(ObjectKind::qp))
    if (qp->send_cq == cq || qp->recv_cq == cq)
      qps.push_back(static_cast<ibv_qp*>(const_cast<void*>(qp->handle)));
  return qps;
}

// Effect-level overflow on a real provider: the CQ in error (poll fails
// with EIO), IBV_EVENT_CQ_ERR, every QP on it to ERR with QP_FATAL.
void overflow_real(FaultEngine& engine, const Target& target) {
  std::vector<ibv_qp*> qps;
  {
    std::lock_guard lock(engine.lock());
    if (ObjectFaults* cq = engine.find(target.object)) cq->overflowed = true;
    queue_async(engine, target.context, IBV_EVENT_CQ_ERR, target.object, 0);
    qps = qps_on(engine, static_cast<const ibv_cq*>(target.object));
  }
  for (ibv_qp* qp : qps) qp_to_error(qp);
  std::lock_guard lock(engine.lock());
  for (ibv_qp* qp : qps) queue_async(engine, target.context, IBV_EVENT_QP_FATAL, qp, 0);
}

// Effect level on a real provider: the event, and what the spec says
// follows it, driven through the provider's verbs.
Level async_event_real(FaultEngine& engine, const Target& target, ibv_event_type type,
                       std::uint8_t port) {
  if (type == IBV_EVENT_CQ_ERR) {
    overflow_real(engine, target);
    return Level::effect;
  }
  std::vector<ibv_qp*> to_error;
  {
    std::lock_guard lock(engine.lock());
    ObjectFaults* context = engine.find(target.context);
    if (context == nullptr || !context->events.wrapped()) return Level::unsupported;
    switch (type) {
      case IBV_EVENT_QP_FATAL:
      case IBV_EVENT_QP_REQ_ERR:
      case IBV_EVENT_QP_ACCESS_ERR:
        to_error.push_back(static_cast<ibv_qp*>(const_cast<void*>(target.object)));
        break;
      case IBV_EVENT_PORT_ERR:
        context->port_down = true;
        break;
      case IBV_EVENT_PORT_ACTIVE:
        context->port_down = false;
        break;
      case IBV_EVENT_DEVICE_FATAL:
        context->dead = true;
        for (const record::Object* qp : engine.live(ObjectKind::qp))
          if (qp->context_handle == target.context)
            to_error.push_back(static_cast<ibv_qp*>(const_cast<void*>(qp->handle)));
        break;
      default:
        break;
    }
    queue_async(engine, target.context, type, target.object, port);
  }
  for (ibv_qp* qp : to_error) qp_to_error(qp);
  return Level::effect;
}

}  // namespace

Level async_event(FaultEngine& engine, const Target& target, ibv_event_type type,
                  std::uint8_t port) {
  if (!target.simulated) return async_event_real(engine, target, type, port);
  int err = 0;
  switch (record::element_kind(type)) {
    case ObjectKind::qp:
      err = provider::raise_qp_event(static_cast<ibv_qp*>(const_cast<void*>(target.object)), type);
      break;
    case ObjectKind::srq:
      err =
          provider::raise_srq_event(static_cast<ibv_srq*>(const_cast<void*>(target.object)), type);
      break;
    case ObjectKind::cq:
      err = provider::raise_cq_event(static_cast<ibv_cq*>(const_cast<void*>(target.object)), type);
      break;
    default: {
      ibv_port_attr attr{};
      switch (type) {
        case IBV_EVENT_PORT_ERR:
          err = provider::set_port_state(target.context, port, IBV_PORT_DOWN);
          break;
        case IBV_EVENT_PORT_ACTIVE:
          err = provider::set_port_state(target.context, port, IBV_PORT_ACTIVE);
          break;
        case IBV_EVENT_LID_CHANGE:
          // A new LID: traffic addressed to the old one no longer arrives.
          err = provider::query_port(target.context, port,
                                     reinterpret_cast<_compat_ibv_port_attr*>(&attr));
          if (err == 0) err = provider::set_port_lid(target.context, port, attr.lid + 0x1000);
          break;
        case IBV_EVENT_GID_CHANGE: {
          ibv_gid gid{};
          err = provider::query_gid(target.context, port, 0, &gid);
          gid.raw[15] ^= 0xff;
          if (err == 0) err = provider::set_gid(target.context, port, 0, gid);
          break;
        }
        case IBV_EVENT_DEVICE_FATAL:
          err = provider::device_fatal(target.context);
          break;
        default:
          return Level::unsupported;  // PKEY/SM change, client reregister
      }
    }
  }
  return err == 0 ? Level::cause : Level::unsupported;
}

Level cq_overflow(FaultEngine& engine, const Target& target) {
  if (!target.simulated) {
    overflow_real(engine, target);
    return Level::effect;
  }
  // The device's own overflow chain: the CQ in error, CQ_ERR, every QP on
  // it QP_FATAL and ERR.
  provider::raise_cq_event(static_cast<ibv_cq*>(const_cast<void*>(target.object)),
                           IBV_EVENT_CQ_ERR);
  return Level::cause;
}

Level port_down(FaultEngine& engine, const Target& target, std::uint8_t port) {
  if (!target.simulated) return async_event_real(engine, target, IBV_EVENT_PORT_ERR, port);
  return provider::set_port_state(target.context, port, IBV_PORT_DOWN) == 0 ? Level::cause
                                                                            : Level::unsupported;
}

Level device_fatal(FaultEngine& engine, const Target& target) {
  if (!target.simulated) return async_event_real(engine, target, IBV_EVENT_DEVICE_FATAL, 0);
  return provider::device_fatal(target.context) == 0 ? Level::cause : Level::unsupported;
}

Level spurious_cq_event(FaultEngine& engine, ibv_cq* cq, bool simulated) {
  if (cq->channel == nullptr) return Level::unsupported;  // no channel, no event
  if (simulated) return provider::notify_cq(cq) == 0 ? Level::cause : Level::unsupported;
  std::lock_guard lock(engine.lock());
  ObjectFaults* channel = engine.find(cq->channel);
  if (channel == nullptr || !channel->events.wrapped()) return Level::unsupported;
  channel->injected_cq_events.push_back(cq);
  channel->events.signal();
  return Level::effect;
}

std::string_view to_string(Level level) {
  switch (level) {
    case Level::cause:
      return "cause";
    case Level::effect:
      return "effect";
    case Level::unsupported:
      return "unsupported";
  }
  return "unsupported";
}

}  // namespace verbfault::engine::inject
