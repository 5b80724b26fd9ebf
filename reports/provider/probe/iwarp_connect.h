// Connecting two QPs of one iWARP device to each other. An iWARP QP
// reaches RTS only over a connection of its lower layer (TCP, MPA) that
// the iWARP connection manager sets up: ibv_modify_qp to RTR/RTS is not
// how it is done (siw refuses it). So the probe does what an application
// does, through librdmacm: a listener on the device's IPv4 address, an
// active id that connects naming the first QP, and the passive side's
// accept naming the second (rdma_connect(3), rdma_accept(3):
// conn_param.qp_num for a QP not made by rdma_create_qp; the kernel's
// iw_cm finds the QP by that number and moves it to RTS once the
// connection is up). Both QPs must be in INIT first.
#pragma once

#include <infiniband/verbs.h>

#include <string>

namespace verbfault::probe {

// 0 when both QPs are connected, else an errno with *why saying which step
// failed. The rdma_cm ids stay alive with the connection (the area's
// process ends with _exit: verbs_kit.h).
int iwarp_connect(ibv_context* ctx, ibv_qp* active, ibv_qp* passive, int timeout_ms,
                  std::string* why);

}  // namespace verbfault::probe
