#include "fault_kinds.h"

#include <algorithm>

namespace verbfault::engine {

// The rows in the order plans' error messages list the kinds. `counts` and
// `observed` are docs/fault-kinds.md's table of fault kinds, cell for cell
// (FaultKinds.TheReadmeTableIsTheDescriptorTable checks it).
const std::array<FaultKindInfo, kFaultKindCount>& fault_kinds() {
  static constexpr std::array<FaultKindInfo, kFaultKindCount> kTable =
      {
          {
              {FaultKind::cq_overflow, "cq_overflow", "cq_overflow", Site::poll, true,
               R"~(polls of the CQ)~", R"~(polls fail; `CQ_ERR`; `QP_FATAL` + ERR for its QPs)~"},
              {FaultKind::flush, "flush", "flush", Site::posted_wr, true, R"~(posted WRs)~",
               R"~(QP to ERR before the WR; every WR flushed)~"},
              {FaultKind::rnr_retry_exhausted, "rnr_retry_exhausted", "rnr_retry_exhausted",
               Site::posted_wr, false, R"~(posted RC SEND / SEND_WITH_IMM / WRITE_WITH_IMM WRs)~",
               R"~(that WR completes `RNR_RETRY_EXC_ERR`, QP to ERR, rest flushed (simulated device: it really RNR-NAKs every retry, the responder never gets the message))~"},
              {FaultKind::retry_exhausted, "retry_exhausted", "retry_exhausted", Site::posted_wr,
               false, R"~(posted RC send-queue WRs)~",
               R"~(the same with `RETRY_EXC_ERR` (simulated device: the message is really lost on every retry))~"},
              {FaultKind::completion_error, "completion_error", "completion_error(status)",
               Site::posted_wr, true, R"~(posted WRs)~",
               R"~(that WR completes with `status`, QP to ERR, rest flushed)~",
               {"status"}, "missing or success status: expected an error status such as rem_access_err"},
              {FaultKind::spurious_cq_event, "spurious_cq_event", "spurious_cq_event", Site::arm,
               true, R"~(`ibv_req_notify_cq` calls)~", R"~(an event with no completion)~"},
              {FaultKind::drop_cq_event, "drop_cq_event", "drop_cq_event", Site::cq_event, true,
               R"~(events delivered)~", R"~(the event never arrives)~"},
              {FaultKind::coalesce_cq_event, "coalesce_cq_event", "coalesce_cq_event",
               Site::cq_event, true, R"~(events delivered)~",
               R"~(the next event of that CQ is merged into this one)~"},
              {FaultKind::async_event, "async_event", "async_event(type)", Site::call, false,
               R"~(calls on an object of the event's kind)~",
               R"~(the event, with its consequences (QP_FATAL: QP to ERR ...))~",
               {"event"}, "missing event: expected an event type such as qp_fatal"},
              {FaultKind::verb_failure, "verb_failure", "verb_failure(verb,ERRNO)", Site::call,
               false, R"~(calls of the verb (posts: per WR))~",
               R"~(the call fails with ERRNO; posts set `bad_wr` to that WR, the ones before it are posted)~",
               {"verb", "error"}, "missing verb or error: expected e.g. verb_failure(post_send,ENOMEM)"},
              {FaultKind::delayed_completion, "delayed_completion", "delayed_completion(n)",
               Site::completion, true, R"~(completions returned)~",
               R"~(it (and what follows it on the CQ, order kept) is held until n polls of its CQ have come back empty (the poll that held it counts if it returned nothing; one that returned earlier completions does not), and arrives just after the n-th: before that thread's next call, so in an event loop between its empty poll and its arm. The next poll returns it; an arm made before it arrived raises an event for it (IBA 11.4.2.2), an arm made after it does not (`ibv_req_notify_cq(3)`: only later completions), so a loop that arms and sleeps without polling again sleeps forever. A thread that waits on the CQ's channel (`ibv_get_cq_event`, or `poll`/`epoll_wait`/`read` of its fd) while it is still held gets it then, with an event if the CQ is armed. Extended CQs: an `ibv_start_poll` that returns `ENOENT` is an empty poll)~",
               {"polls"}, "missing polls: expected a number of polls >= 1"},
              {FaultKind::partial_poll, "partial_poll", "partial_poll", Site::poll, true,
               R"~(`ibv_poll_cq` calls asking for 2 or more)~",
               R"~(fewer completions than asked for (1 .. n-1), none lost)~"},
              {FaultKind::port_down, "port_down", "port_down(port)", Site::call, true,
               R"~(calls on the context's objects)~",
               R"~(`PORT_ERR`, the port reads down, RC traffic ends in `RETRY_EXC_ERR`)~",
               {"port"}},
              {FaultKind::device_fatal, "device_fatal", "device_fatal", Site::call, true,
               R"~(calls on the context's objects)~",
               R"~(`DEVICE_FATAL`; later verbs fail with `EIO`)~"},
              {FaultKind::cm_addr_error, "cm_addr_error", "cm_addr_error", Site::cm_command, false,
               R"~(`rdma_resolve_addr` of an rdma_cm id)~",
               R"~(`ADDR_ERROR`, status `-ETIMEDOUT` (no neighbour answered), the id bound as before)~"},
              {FaultKind::cm_route_error, "cm_route_error", "cm_route_error", Site::cm_command,
               false, R"~(`rdma_resolve_route`)~",
               R"~(InfiniBand: `ROUTE_ERROR`, `-ETIMEDOUT` (the SA never answered the path query); RoCE: the call fails with `ENODEV` (the port's netdev is gone))~"},
              {FaultKind::cm_unreachable, "cm_unreachable", "cm_unreachable", Site::cm_command,
               false,
               R"~(`rdma_connect`, then (RoCE) the connection's establishment (`CONNECT_RESPONSE` on the active side, `ESTABLISHED` on the passive))~",
               R"~(at a connect: `UNREACHABLE`, `-ETIMEDOUT`: the REQ was lost on every retry; the passive side never hears of it. After the establishment: `UNREACHABLE`, `-ETIMEDOUT` behind it, the connection left as it is, as Linux 6.0+ queues it for a RoCE id whose neighbour changed its address (`cma_netevent_callback`))~"},
              {FaultKind::cm_reject, "cm_reject", "cm_reject", Site::cm_command, false,
               R"~(`rdma_connect`)~",
               R"~(`REJECTED`, status 28 (consumer-defined) with the private data `verbfault: cm_reject` (UD: `UNREACHABLE` status 2, the SIDR reject); the passive side never hears of it)~"},
              {FaultKind::cm_connect_error,
               "cm_connect_error", "cm_connect_error", Site::cm_event, false, R"~(`CONNECT_RESPONSE` events of an active id with a QP (`rdma_connect`'s answer, the REP, arrives))~", R"~(the QP cannot take the REP: librdmacm's modify of it to RTR fails with `EINVAL` (as for a REP whose path or depths the QP cannot take), so the id hears `CONNECT_ERROR` (status -1, librdmacm's) and its QP goes to ERR; the passive side hears no RTU (a `REJECTED` when the active side destroys its id))~"},
              {FaultKind::cm_device_removal, "cm_device_removal", "cm_device_removal",
               Site::cm_event, false, R"~(events an id is about to report, of any type)~",
               R"~(after that event the id's device is removed (hot unplug, a driver unloaded): every id of the process on the device hears `DEVICE_REMOVAL` (a wildcard listener, on no device, does not), their commands then fail but `rdma_destroy_id`, and the verbs device of the QP the id connected is fatal (`DEVICE_FATAL`, later verbs `EIO`))~"},
              {FaultKind::cm_addr_change, "cm_addr_change", "cm_addr_change", Site::cm_event,
               false, R"~(events an id is about to report, of any type)~",
               R"~(after that event the hardware address of the netdev the id is bound to changes (a bond fails over to another slave): every id of the process bound to that port hears `ADDR_CHANGE`, status 0, in whatever state it is; the connection goes on, and what to do (nothing, or reconnect) is the application's)~"},
              {FaultKind::cm_lost_disconnect, "cm_lost_disconnect", "cm_lost_disconnect",
               Site::cm_event, false, R"~(`DISCONNECTED` events an id is about to report)~",
               R"~(the event never comes (the id's reported events no longer count it, so `rdma_destroy_id` does not wait for it))~"},
              {FaultKind::cm_timewait_exit_missing, "cm_timewait_exit_missing",
               "cm_timewait_exit_missing", Site::cm_event, false, R"~(`TIMEWAIT_EXIT` events)~",
               R"~(the event never comes)~"},
              {FaultKind::cm_delay, "cm_delay", "cm_delay(event,ms)", Site::cm_event, false,
               R"~(events of that type an id is about to report)~",
               R"~(the event is held up on the way for `ms` of virtual time: what comes meanwhile is read first (an active id with a QP hears `connect_response`, which librdmacm turns into `ESTABLISHED`))~",
               {"cm_event", "delay_ms"}, "missing event or delay: expected e.g. cm_delay(established,50)"},
              {FaultKind::cm_disconnect, "cm_disconnect", "cm_disconnect", Site::posted_wr, false,
               R"~(WRs posted on a QP an rdma_cm id connected (`rdma_connect`/`rdma_accept`))~",
               R"~(the peer is gone before that WR: the QP goes to ERR, the WR and what is outstanding are flushed, the id hears `DISCONNECTED` (as from the DREQ the peer's kernel sends when its process dies); the peer's side is not told: its sends to this QP end in `RETRY_EXC_ERR`)~"},
          }};
  return kTable;
}

const FaultKindInfo& info(FaultKind kind) {
  const auto& table = fault_kinds();
  return *std::find_if(table.begin(), table.end(),
                       [kind](const FaultKindInfo& row) { return row.kind == kind; });
}

}  // namespace verbfault::engine
