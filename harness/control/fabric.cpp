// verbfault/fabric.h: the public face of the simulated fabric's
// conditions, through the interposer (calls.h).
#include "verbfault/fabric.h"

#include "calls.h"

namespace verbfault::fabric {

int set_port_state(ibv_context* context, uint8_t port, ibv_port_state state) {
  return interposer::calls::set_port_state(context, port, state);
}

int set_port_lid(ibv_context* context, uint8_t port, uint16_t lid) {
  return interposer::calls::set_port_lid(context, port, lid);
}

int set_gid(ibv_context* context, uint8_t port, int index, const ibv_gid& gid) {
  return interposer::calls::set_gid(context, port, index, gid);
}

int device_fatal(ibv_context* context) {
  return interposer::calls::device_fatal(context);
}

int raise_event(ibv_qp* qp, ibv_event_type type) {
  return interposer::calls::raise_qp_event(qp, type);
}
int raise_event(ibv_srq* srq, ibv_event_type type) {
  return interposer::calls::raise_srq_event(srq, type);
}
int raise_event(ibv_cq* cq, ibv_event_type type) {
  return interposer::calls::raise_cq_event(cq, type);
}

}  // namespace verbfault::fabric
