// verbfault/fabric.h: the public face of the simulated fabric's conditions.
#include "verbfault/fabric.h"

#include "conditions.h"

namespace verbfault::fabric {

int set_port_state(ibv_context* context, uint8_t port, ibv_port_state state) {
  return provider::set_port_state(context, port, state);
}

int set_port_lid(ibv_context* context, uint8_t port, uint16_t lid) {
  return provider::set_port_lid(context, port, lid);
}

int set_gid(ibv_context* context, uint8_t port, int index, const ibv_gid& gid) {
  return provider::set_gid(context, port, index, gid);
}

int device_fatal(ibv_context* context) {
  return provider::device_fatal(context);
}

int raise_event(ibv_qp* qp, ibv_event_type type) {
  return provider::raise_qp_event(qp, type);
}
int raise_event(ibv_srq* srq, ibv_event_type type) {
  return provider::raise_srq_event(srq, type);
}
int raise_event(ibv_cq* cq, ibv_event_type type) {
  return provider::raise_cq_event(cq, type);
}

}  // namespace verbfault::fabric
