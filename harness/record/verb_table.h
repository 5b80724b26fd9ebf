// The verbs the front door exports, declared once. Every layer's list of
// them is generated from this table:
//
//   frontdoor/exports_verbs.cpp   the exported ibv_* functions (forwarders)
//   interposer/calls.h            interposer::calls::<name>, one per verb
//   provider/verbs.h              provider::<name>, one per verb
//   provider/routing.cpp          the provider's dispatch of the ROUTED rows
//   frontdoor/libibverbs.map.in   the IBVERBS_* nodes of the version script
//                                 (frontdoor/generate_version_map.cpp, run
//                                 by CMake)
//   fakes/provider_double         the double's version script, likewise
//
// The fast-path verbs (poll_cq, post_send, post_recv, req_notify_cq,
// post_srq_recv and the extended ones) are not exported functions: they
// are ops of the context, replaced by trampolines (interposer/
// trampolines.cpp), and are not in this table.
//
// Adding a verb is one row here plus its interposer function (the hooks
// around the provider's call, interposer/calls_*.cpp) and, for a CUSTOM
// row, its provider function; see docs/hacking.md.
//
// Columns of VERBFAULT_VERB(ret, name, symbol, version, params, args,
//                           front, route, by):
//   ret      the return type, as libibverbs declares it (infiniband/verbs.h)
//   name     the layers' function name: interposer::calls::name,
//            provider::name and, for ROUTED rows, sim::name
//   symbol   the exported symbol
//   version  its symbol version in libibverbs.so.1 (rdma-core v44)
//   params   the parameter list, parenthesized
//   args     the parameters' names, parenthesized
//   front    how the export enters the interposer:
//              POINT   a scheduling point of the thread scheduler, then the
//                      call (thread_calls::verbs_point())
//              CALLER  the same, and the interposer is told the caller's
//                      return address (it tells the program's objects from
//                      those libraries keep until exit: librdmacm's)
//              INSIDE  no scheduling point: libibverbs and librdmacm call
//                      these from inside another verb (ibv_reg_mr calls
//                      ibv_reg_mr_iova2; rdma_resolve_route calls
//                      ibv_resolve_eth_l2_from_gid), where the thread must
//                      not be switched out
//   route    how the provider layer chooses the provider:
//              ROUTED  sim::name(args) when `by` belongs to a simulated
//                      device, else the real symbol@version (generated)
//              CUSTOM  written by hand in provider/ (a merged list, a
//                      different signature below, or an errno of a call
//                      the simulated device does not support)
//   by       the argument whose context decides (ROUTED rows), else _
//
// Rows are grouped as the man pages group them; a group's macro lists its
// rows and VERBFAULT_VERBS lists every group.
#pragma once

// clang-format off
#define VERBFAULT_DEVICE_VERBS(VERB)                                                              \
  VERB(ibv_device**, get_device_list, ibv_get_device_list, "IBVERBS_1.1",                         \
       (int* num_devices), (num_devices), POINT, CUSTOM, _)                                       \
  VERB(void, free_device_list, ibv_free_device_list, "IBVERBS_1.1",                               \
       (ibv_device** list), (list), POINT, CUSTOM, _)                                             \
  VERB(const char*, get_device_name, ibv_get_device_name, "IBVERBS_1.1",                          \
       (ibv_device* device), (device), POINT, CUSTOM, _)                                          \
  VERB(__be64, get_device_guid, ibv_get_device_guid, "IBVERBS_1.1",                               \
       (ibv_device* device), (device), POINT, CUSTOM, _)                                          \
  VERB(int, get_device_index, ibv_get_device_index, "IBVERBS_1.9",                                \
       (ibv_device* device), (device), POINT, ROUTED, device)                                     \
  VERB(ibv_context*, open_device, ibv_open_device, "IBVERBS_1.1",                                 \
       (ibv_device* device), (device), CALLER, ROUTED, device)                                    \
  VERB(ibv_context*, import_device, ibv_import_device, "IBVERBS_1.10",                            \
       (int cmd_fd), (cmd_fd), POINT, CUSTOM, _)                                                  \
  VERB(int, close_device, ibv_close_device, "IBVERBS_1.1",                                        \
       (ibv_context* context), (context), POINT, ROUTED, context)                                 \
  VERB(int, read_sysfs_file, ibv_read_sysfs_file, "IBVERBS_1.0",                                  \
       (const char* dir, const char* file, char* buf, size_t size), (dir, file, buf, size),      \
       POINT, CUSTOM, _)                                                                          \
  VERB(int, query_device, ibv_query_device, "IBVERBS_1.1",                                        \
       (ibv_context* context, ibv_device_attr* attr), (context, attr), POINT, ROUTED, context)   \
  VERB(int, query_port, ibv_query_port, "IBVERBS_1.1",                                            \
       (ibv_context* context, uint8_t port, _compat_ibv_port_attr* attr), (context, port, attr), \
       POINT, CUSTOM, _)                                                                          \
  VERB(int, query_gid, ibv_query_gid, "IBVERBS_1.1",                                              \
       (ibv_context* context, uint8_t port, int index, ibv_gid* gid), (context, port, index, gid),\
       POINT, ROUTED, context)                                                                    \
  VERB(int, query_gid_ex, _ibv_query_gid_ex, "IBVERBS_1.11",                                      \
       (ibv_context* context, uint32_t port, uint32_t index, ibv_gid_entry* entry,               \
        uint32_t flags, size_t entry_size),                                                       \
       (context, port, index, entry, flags, entry_size), POINT, ROUTED, context)                  \
  VERB(ssize_t, query_gid_table, _ibv_query_gid_table, "IBVERBS_1.11",                            \
       (ibv_context* context, ibv_gid_entry* entries, size_t max_entries, uint32_t flags,        \
        size_t entry_size),                                                                       \
       (context, entries, max_entries, flags, entry_size), POINT, ROUTED, context)                \
  VERB(int, query_gid_type, ibv_query_gid_type, "IBVERBS_PRIVATE_34",                             \
       (ibv_context* context, uint8_t port, unsigned int index, int* type),                      \
       (context, port, index, type), POINT, ROUTED, context)                                      \
  VERB(int, query_pkey, ibv_query_pkey, "IBVERBS_1.1",                                            \
       (ibv_context* context, uint8_t port, int index, __be16* pkey),                            \
       (context, port, index, pkey), POINT, ROUTED, context)                                      \
  VERB(int, get_pkey_index, ibv_get_pkey_index, "IBVERBS_1.5",                                    \
       (ibv_context* context, uint8_t port, __be16 pkey), (context, port, pkey),                 \
       POINT, ROUTED, context)                                                                    \
  VERB(int, resolve_eth_l2_from_gid, ibv_resolve_eth_l2_from_gid, "IBVERBS_1.1",                  \
       (ibv_context* context, ibv_ah_attr* attr, uint8_t eth_mac[6], uint16_t* vid),             \
       (context, attr, eth_mac, vid), INSIDE, CUSTOM, _)                                          \
  VERB(ibv_pd*, import_pd, ibv_import_pd, "IBVERBS_1.10",                                         \
       (ibv_context* context, uint32_t pd_handle), (context, pd_handle), POINT, ROUTED, context) \
  VERB(ibv_dm*, import_dm, ibv_import_dm, "IBVERBS_1.13",                                         \
       (ibv_context* context, uint32_t dm_handle), (context, dm_handle), POINT, CUSTOM, _)

#define VERBFAULT_RESOURCE_VERBS(VERB)                                                            \
  VERB(ibv_pd*, alloc_pd, ibv_alloc_pd, "IBVERBS_1.1",                                            \
       (ibv_context* context), (context), CALLER, ROUTED, context)                                \
  VERB(int, dealloc_pd, ibv_dealloc_pd, "IBVERBS_1.1", (ibv_pd* pd), (pd), POINT, ROUTED, pd)     \
  VERB(ibv_mr*, reg_mr, ibv_reg_mr, "IBVERBS_1.1",                                                \
       (ibv_pd* pd, void* addr, size_t length, int access), (pd, addr, length, access),          \
       POINT, CUSTOM, _)                                                                          \
  VERB(ibv_mr*, reg_mr_iova, ibv_reg_mr_iova, "IBVERBS_1.7",                                      \
       (ibv_pd* pd, void* addr, size_t length, uint64_t iova, int access),                       \
       (pd, addr, length, iova, access), POINT, CUSTOM, _)                                        \
  VERB(ibv_mr*, reg_mr_iova2, ibv_reg_mr_iova2, "IBVERBS_1.8",                                    \
       (ibv_pd* pd, void* addr, size_t length, uint64_t iova, unsigned int access),              \
       (pd, addr, length, iova, access), INSIDE, CUSTOM, _)                                       \
  VERB(ibv_mr*, reg_dmabuf_mr, ibv_reg_dmabuf_mr, "IBVERBS_1.12",                                 \
       (ibv_pd* pd, uint64_t offset, size_t length, uint64_t iova, int fd, int access),          \
       (pd, offset, length, iova, fd, access), POINT, CUSTOM, _)                                  \
  VERB(int, rereg_mr, ibv_rereg_mr, "IBVERBS_1.1",                                                \
       (ibv_mr* mr, int flags, ibv_pd* pd, void* addr, size_t length, int access),               \
       (mr, flags, pd, addr, length, access), POINT, ROUTED, mr)                                  \
  VERB(int, dereg_mr, ibv_dereg_mr, "IBVERBS_1.1", (ibv_mr* mr), (mr), POINT, ROUTED, mr)         \
  VERB(ibv_mr*, import_mr, ibv_import_mr, "IBVERBS_1.10",                                         \
       (ibv_pd* pd, uint32_t mr_handle), (pd, mr_handle), POINT, ROUTED, pd)                      \
  VERB(void, unimport_mr, ibv_unimport_mr, "IBVERBS_1.10", (ibv_mr* mr), (mr), POINT, ROUTED, mr) \
  VERB(void, unimport_pd, ibv_unimport_pd, "IBVERBS_1.10", (ibv_pd* pd), (pd), POINT, ROUTED, pd) \
  VERB(void, unimport_dm, ibv_unimport_dm, "IBVERBS_1.13", (ibv_dm* dm), (dm), POINT, CUSTOM, _)  \
  VERB(ibv_ah*, create_ah, ibv_create_ah, "IBVERBS_1.1",                                          \
       (ibv_pd* pd, ibv_ah_attr* attr), (pd, attr), POINT, ROUTED, pd)                            \
  VERB(int, destroy_ah, ibv_destroy_ah, "IBVERBS_1.1", (ibv_ah* ah), (ah), POINT, ROUTED, ah)     \
  VERB(int, init_ah_from_wc, ibv_init_ah_from_wc, "IBVERBS_1.1",                                  \
       (ibv_context* context, uint8_t port, ibv_wc* wc, ibv_grh* grh, ibv_ah_attr* attr),        \
       (context, port, wc, grh, attr), POINT, ROUTED, context)                                    \
  VERB(ibv_ah*, create_ah_from_wc, ibv_create_ah_from_wc, "IBVERBS_1.1",                          \
       (ibv_pd* pd, ibv_wc* wc, ibv_grh* grh, uint8_t port), (pd, wc, grh, port),                \
       POINT, CUSTOM, _)                                                                          \
  VERB(ibv_comp_channel*, create_comp_channel, ibv_create_comp_channel, "IBVERBS_1.0",            \
       (ibv_context* context), (context), POINT, ROUTED, context)                                 \
  VERB(int, destroy_comp_channel, ibv_destroy_comp_channel, "IBVERBS_1.0",                        \
       (ibv_comp_channel* channel), (channel), POINT, ROUTED, channel)                            \
  VERB(ibv_cq*, create_cq, ibv_create_cq, "IBVERBS_1.1",                                          \
       (ibv_context* context, int cqe, void* cq_context, ibv_comp_channel* channel,              \
        int comp_vector),                                                                         \
       (context, cqe, cq_context, channel, comp_vector), POINT, ROUTED, context)                  \
  VERB(int, resize_cq, ibv_resize_cq, "IBVERBS_1.1", (ibv_cq* cq, int cqe), (cq, cqe),           \
       POINT, ROUTED, cq)                                                                         \
  VERB(int, destroy_cq, ibv_destroy_cq, "IBVERBS_1.1", (ibv_cq* cq), (cq), POINT, ROUTED, cq)     \
  VERB(ibv_srq*, create_srq, ibv_create_srq, "IBVERBS_1.1",                                       \
       (ibv_pd* pd, ibv_srq_init_attr* attr), (pd, attr), POINT, ROUTED, pd)                      \
  VERB(int, modify_srq, ibv_modify_srq, "IBVERBS_1.1",                                            \
       (ibv_srq* srq, ibv_srq_attr* attr, int mask), (srq, attr, mask), POINT, ROUTED, srq)      \
  VERB(int, query_srq, ibv_query_srq, "IBVERBS_1.1",                                              \
       (ibv_srq* srq, ibv_srq_attr* attr), (srq, attr), POINT, ROUTED, srq)                       \
  VERB(int, destroy_srq, ibv_destroy_srq, "IBVERBS_1.1", (ibv_srq* srq), (srq),                  \
       POINT, ROUTED, srq)                                                                        \
  VERB(ibv_qp*, create_qp, ibv_create_qp, "IBVERBS_1.1",                                          \
       (ibv_pd* pd, ibv_qp_init_attr* attr), (pd, attr), POINT, ROUTED, pd)                       \
  VERB(int, modify_qp, ibv_modify_qp, "IBVERBS_1.1",                                              \
       (ibv_qp* qp, ibv_qp_attr* attr, int mask), (qp, attr, mask), POINT, ROUTED, qp)           \
  VERB(int, query_qp, ibv_query_qp, "IBVERBS_1.1",                                                \
       (ibv_qp* qp, ibv_qp_attr* attr, int mask, ibv_qp_init_attr* init),                        \
       (qp, attr, mask, init), POINT, ROUTED, qp)                                                 \
  VERB(int, destroy_qp, ibv_destroy_qp, "IBVERBS_1.1", (ibv_qp* qp), (qp), POINT, ROUTED, qp)     \
  VERB(ibv_qp_ex*, qp_to_qp_ex, ibv_qp_to_qp_ex, "IBVERBS_1.6", (ibv_qp* qp), (qp),              \
       POINT, ROUTED, qp)                                                                         \
  VERB(int, query_qp_data_in_order, ibv_query_qp_data_in_order, "IBVERBS_1.14",                   \
       (ibv_qp* qp, ibv_wr_opcode op, uint32_t flags), (qp, op, flags), POINT, CUSTOM, _)        \
  VERB(int, query_ece, ibv_query_ece, "IBVERBS_1.10", (ibv_qp* qp, ibv_ece* ece), (qp, ece),     \
       POINT, CUSTOM, _)                                                                          \
  VERB(int, set_ece, ibv_set_ece, "IBVERBS_1.10", (ibv_qp* qp, ibv_ece* ece), (qp, ece),         \
       POINT, CUSTOM, _)                                                                          \
  VERB(int, attach_mcast, ibv_attach_mcast, "IBVERBS_1.1",                                        \
       (ibv_qp* qp, const ibv_gid* gid, uint16_t lid), (qp, gid, lid), POINT, ROUTED, qp)        \
  VERB(int, detach_mcast, ibv_detach_mcast, "IBVERBS_1.1",                                        \
       (ibv_qp* qp, const ibv_gid* gid, uint16_t lid), (qp, gid, lid), POINT, ROUTED, qp)

#define VERBFAULT_EVENT_VERBS(VERB)                                                               \
  VERB(int, get_cq_event, ibv_get_cq_event, "IBVERBS_1.1",                                        \
       (ibv_comp_channel* channel, ibv_cq** cq, void** cq_context), (channel, cq, cq_context),   \
       POINT, ROUTED, channel)                                                                    \
  VERB(void, ack_cq_events, ibv_ack_cq_events, "IBVERBS_1.1",                                     \
       (ibv_cq* cq, unsigned int nevents), (cq, nevents), POINT, ROUTED, cq)                      \
  VERB(int, get_async_event, ibv_get_async_event, "IBVERBS_1.1",                                  \
       (ibv_context* context, ibv_async_event* event), (context, event), POINT, ROUTED, context) \
  VERB(void, ack_async_event, ibv_ack_async_event, "IBVERBS_1.1",                                 \
       (ibv_async_event* event), (event), POINT, CUSTOM, _)
// clang-format on

#define VERBFAULT_VERBS(VERB)    \
  VERBFAULT_DEVICE_VERBS(VERB)   \
  VERBFAULT_RESOURCE_VERBS(VERB) \
  VERBFAULT_EVENT_VERBS(VERB)

// Helpers for the generators: a parenthesized list without its parentheses.
#define VERBFAULT_UNPAREN(...) __VA_ARGS__

// Functions programs take from libibverbs itself that the front door does
// not export (pure functions of their arguments, and fork support): the
// provider double, which stands in for libibverbs.so.1, exports them too.
// VERBFAULT_LIBIBVERBS_HELPER(symbol, version)
#define VERBFAULT_LIBIBVERBS_HELPERS(HELPER)     \
  HELPER(ibv_rate_to_mult, "IBVERBS_1.0")        \
  HELPER(mult_to_ibv_rate, "IBVERBS_1.0")        \
  HELPER(ibv_wc_status_str, "IBVERBS_1.1")       \
  HELPER(ibv_event_type_str, "IBVERBS_1.1")      \
  HELPER(ibv_node_type_str, "IBVERBS_1.1")       \
  HELPER(ibv_port_state_str, "IBVERBS_1.1")      \
  HELPER(ibv_rate_to_mbps, "IBVERBS_1.1")        \
  HELPER(mbps_to_ibv_rate, "IBVERBS_1.1")        \
  HELPER(ibv_fork_init, "IBVERBS_1.1")           \
  HELPER(ibv_is_fork_initialized, "IBVERBS_1.13")
