// The librdmacm functions the front door exports, declared once: the
// forwarders of exports_rdmacm.cpp and the RDMACM_* nodes of the version
// script (generate_version_map.cpp) are generated from it.
//
// Columns of VERBFAULT_RDMACM_CALL(name, version, params, args, guard):
//   name     the exported symbol, librdmacm's own name
//   version  its symbol version in librdmacm.so.1 (rdma-core v44)
//   params   the parameter list, parenthesized; the first is the id
//   args     the parameters' names, parenthesized
//   guard    what the front door refuses before librdmacm sees the call:
//              ID         a NULL id: EINVAL (rdma_cm(7): an invalid
//                         argument), where librdmacm would dereference it
//              ID_DEVICE  that, and an id bound to no device (idle, or
//                         bound only to the wildcard: no resolved route,
//                         not a listener's child): EINVAL, the kernel's
//                         answer (ucma_get_ctx_dev), where librdmacm would
//                         first check the parameters against the device
//                         it does not have, through a NULL pointer
//              CUSTOM     written by hand in exports_rdmacm.cpp (the
//                         calls that tell the interposer about events)
#pragma once

// clang-format off
#define VERBFAULT_RDMACM_CALLS(CALL)                                                               \
  CALL(rdma_bind_addr, "RDMACM_1.0", (rdma_cm_id* id, sockaddr* address), (id, address), ID)       \
  CALL(rdma_resolve_addr, "RDMACM_1.0",                                                            \
       (rdma_cm_id* id, sockaddr* source, sockaddr* destination, int timeout_ms),                  \
       (id, source, destination, timeout_ms), ID)                                                  \
  CALL(rdma_resolve_route, "RDMACM_1.0", (rdma_cm_id* id, int timeout_ms), (id, timeout_ms), ID)   \
  CALL(rdma_listen, "RDMACM_1.0", (rdma_cm_id* id, int backlog), (id, backlog), ID)                \
  CALL(rdma_connect, "RDMACM_1.0", (rdma_cm_id* id, rdma_conn_param* parameters),                  \
       (id, parameters), ID_DEVICE)                                                                \
  CALL(rdma_accept, "RDMACM_1.0", (rdma_cm_id* id, rdma_conn_param* parameters),                   \
       (id, parameters), ID_DEVICE)                                                                \
  CALL(rdma_reject, "RDMACM_1.0", (rdma_cm_id* id, const void* data, uint8_t length),              \
       (id, data, length), ID)                                                                     \
  CALL(rdma_disconnect, "RDMACM_1.0", (rdma_cm_id* id), (id), ID)                                  \
  CALL(rdma_establish, "RDMACM_1.2", (rdma_cm_id* id), (id), ID)                                   \
  CALL(rdma_notify, "RDMACM_1.0", (rdma_cm_id* id, ibv_event_type event), (id, event), ID)         \
  CALL(rdma_migrate_id, "RDMACM_1.0", (rdma_cm_id* id, rdma_event_channel* channel),               \
       (id, channel), ID)                                                                          \
  CALL(rdma_set_option, "RDMACM_1.0",                                                              \
       (rdma_cm_id* id, int level, int name, void* value, size_t length),                          \
       (id, level, name, value, length), ID)                                                       \
  CALL(rdma_create_qp, "RDMACM_1.0", (rdma_cm_id* id, ibv_pd* pd, ibv_qp_init_attr* attributes),   \
       (id, pd, attributes), ID)                                                                   \
  CALL(rdma_join_multicast, "RDMACM_1.0", (rdma_cm_id* id, sockaddr* address, void* context),      \
       (id, address, context), ID)                                                                 \
  CALL(rdma_leave_multicast, "RDMACM_1.0", (rdma_cm_id* id, sockaddr* address), (id, address), ID) \
  CALL(rdma_join_multicast_ex, "RDMACM_1.1",                                                       \
       (rdma_cm_id* id, rdma_cm_join_mc_attr_ex* attributes, void* context),                        \
       (id, attributes, context), ID)                                                              \
  CALL(rdma_init_qp_attr, "RDMACM_1.2", (rdma_cm_id* id, ibv_qp_attr* attributes, int* mask),      \
       (id, attributes, mask), ID)                                                                 \
  CALL(rdma_set_local_ece, "RDMACM_1.3", (rdma_cm_id* id, ibv_ece* ece), (id, ece), ID)            \
  CALL(rdma_get_remote_ece, "RDMACM_1.3", (rdma_cm_id* id, ibv_ece* ece), (id, ece), ID)           \
  CALL(rdma_reject_ece, "RDMACM_1.3", (rdma_cm_id* id, const void* data, uint8_t length),          \
       (id, data, length), ID)                                                                     \
  CALL(rdma_get_cm_event, "RDMACM_1.0", (rdma_event_channel* channel, rdma_cm_event** event),      \
       (channel, event), CUSTOM)                                                                   \
  CALL(rdma_ack_cm_event, "RDMACM_1.0", (rdma_cm_event* event), (event), CUSTOM)                   \
  CALL(rdma_destroy_id, "RDMACM_1.0", (rdma_cm_id* id), (id), CUSTOM)
// clang-format on
