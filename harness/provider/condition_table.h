// The simulated fabric's conditions, declared once: what a test (the
// public verbfault/fabric.h, through the interposer) and the fault engine
// (cause level) can make the simulated device enter, each with the whole
// chain of consequences (fakes/include/verbfault/sim/conditions.h says
// what each does). A row: name, parameters, arguments. The provider
// layer's functions (provider/conditions.h, each forwarding to the
// device's sim::<name>) and the interposer's (interposer/calls.h, each
// forwarding to the provider's) are generated from it. Each returns 0,
// ENODEV when the object is not on a simulated device, or EINVAL.
#pragma once

#include <infiniband/verbs.h>

#include <cstdint>

#define VERBFAULT_CONDITIONS(CONDITION)                                                    \
  CONDITION(set_port_state, (ibv_context * context, uint8_t port, ibv_port_state state),   \
            (context, port, state))                                                        \
  CONDITION(set_port_lid, (ibv_context * context, uint8_t port, uint16_t lid),             \
            (context, port, lid))                                                          \
  CONDITION(set_gid, (ibv_context * context, uint8_t port, int index, const ibv_gid& gid), \
            (context, port, index, gid))                                                   \
  CONDITION(device_fatal, (ibv_context * context), (context))                              \
  CONDITION(raise_qp_event, (ibv_qp * qp, ibv_event_type type), (qp, type))                \
  CONDITION(raise_srq_event, (ibv_srq * srq, ibv_event_type type), (srq, type))            \
  CONDITION(raise_cq_event, (ibv_cq * cq, ibv_event_type type), (cq, type))                \
  CONDITION(notify_cq, (ibv_cq * cq), (cq))
