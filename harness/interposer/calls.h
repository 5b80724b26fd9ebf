// The interposer's side of every exported verb that is not a fast path
// (those are trampolines: trampolines.cpp): one function per verb, with the
// verb's own signature, that runs the hooks (interposer.h) around the
// provider layer's call. The front door's exports only forward here, so
// that calls go one way: front door -> interposer -> provider.
#pragma once

#include "interposer.h"

#include <infiniband/verbs.h>

#include <cerrno>

namespace verbfault::interposer::calls {

// A create call's result: a new object is named and traced, a failure
// traced against its parent; errno is kept.
template <class Handle>
Handle* created(Handle* handle, ObjectKind kind, const void* parent, std::string_view call,
                Fields args = {}) {
  const int error = errno;
  if (handle != nullptr)
    interposer::created(kind, handle, parent, call, args);
  else
    interposer::create_failed(parent, call, args, error);
  errno = error;
  return handle;
}

// A call the fault engine made fail before it reached the provider.
template <class Handle>
Handle* fail_create(int error) {
  errno = error;
  return nullptr;
}

// ---- devices (calls_device.cpp) ----
ibv_device** get_device_list(int* num_devices);
void free_device_list(ibv_device** list);
const char* get_device_name(ibv_device* device);
__be64 get_device_guid(ibv_device* device);
int get_device_index(ibv_device* device);
ibv_context* open_device(ibv_device* device, const void* caller);
int close_device(ibv_context* context);
int read_sysfs_file(const char* dir, const char* file, char* buf, size_t size);
int query_device(ibv_context* context, ibv_device_attr* attr);
int query_port(ibv_context* context, uint8_t port, _compat_ibv_port_attr* attr);
int query_gid(ibv_context* context, uint8_t port, int index, ibv_gid* gid);
int query_gid_ex(ibv_context* context, uint32_t port, uint32_t index, ibv_gid_entry* entry,
                 uint32_t flags, size_t entry_size);
ssize_t query_gid_table(ibv_context* context, ibv_gid_entry* entries, size_t max_entries,
                        uint32_t flags, size_t entry_size);
int query_gid_type(ibv_context* context, uint8_t port, unsigned int index, int* type);
int query_pkey(ibv_context* context, uint8_t port, int index, __be16* pkey);
int get_pkey_index(ibv_context* context, uint8_t port, __be16 pkey);
int resolve_eth_l2_from_gid(ibv_context* context, ibv_ah_attr* attr, uint8_t eth_mac[6],
                            uint16_t* vid);
ibv_pd* import_pd(ibv_context* context, uint32_t pd_handle);
ibv_context* import_device(int cmd_fd);
ibv_dm* import_dm(ibv_context* context, uint32_t dm_handle);

// ---- resources (calls_resources.cpp) ----
ibv_pd* alloc_pd(ibv_context* context, const void* caller);
int dealloc_pd(ibv_pd* pd);
ibv_mr* reg_mr(ibv_pd* pd, void* addr, size_t length, int access);
ibv_mr* reg_mr_iova(ibv_pd* pd, void* addr, size_t length, uint64_t iova, int access);
ibv_mr* reg_mr_iova2(ibv_pd* pd, void* addr, size_t length, uint64_t iova, unsigned int access);
ibv_mr* reg_dmabuf_mr(ibv_pd* pd, uint64_t offset, size_t length, uint64_t iova, int fd,
                      int access);
int rereg_mr(ibv_mr* mr, int flags, ibv_pd* pd, void* addr, size_t length, int access);
int dereg_mr(ibv_mr* mr);
ibv_mr* import_mr(ibv_pd* pd, uint32_t mr_handle);
void unimport_mr(ibv_mr* mr);
void unimport_pd(ibv_pd* pd);
void unimport_dm(ibv_dm* dm);
ibv_ah* create_ah(ibv_pd* pd, ibv_ah_attr* attr);
int destroy_ah(ibv_ah* ah);
int init_ah_from_wc(ibv_context* context, uint8_t port, ibv_wc* wc, ibv_grh* grh,
                    ibv_ah_attr* attr);
ibv_ah* create_ah_from_wc(ibv_pd* pd, ibv_wc* wc, ibv_grh* grh, uint8_t port);
ibv_comp_channel* create_comp_channel(ibv_context* context);
int destroy_comp_channel(ibv_comp_channel* channel);
ibv_cq* create_cq(ibv_context* context, int cqe, void* cq_context, ibv_comp_channel* channel,
                  int comp_vector);
int resize_cq(ibv_cq* cq, int cqe);
int destroy_cq(ibv_cq* cq);
ibv_srq* create_srq(ibv_pd* pd, ibv_srq_init_attr* attr);
int modify_srq(ibv_srq* srq, ibv_srq_attr* attr, int mask);
int query_srq(ibv_srq* srq, ibv_srq_attr* attr);
int destroy_srq(ibv_srq* srq);
ibv_qp* create_qp(ibv_pd* pd, ibv_qp_init_attr* attr);
int modify_qp(ibv_qp* qp, ibv_qp_attr* attr, int mask);
int query_qp(ibv_qp* qp, ibv_qp_attr* attr, int mask, ibv_qp_init_attr* init);
int destroy_qp(ibv_qp* qp);
ibv_qp_ex* qp_to_qp_ex(ibv_qp* qp);
int query_qp_data_in_order(ibv_qp* qp, ibv_wr_opcode op, uint32_t flags);
int query_ece(ibv_qp* qp, ibv_ece* ece);
int set_ece(ibv_qp* qp, ibv_ece* ece);
int attach_mcast(ibv_qp* qp, const ibv_gid* gid, uint16_t lid);
int detach_mcast(ibv_qp* qp, const ibv_gid* gid, uint16_t lid);

// ---- the simulated fabric's conditions (verbfault/fabric.h; calls_device.cpp) ----
int set_port_state(ibv_context* context, uint8_t port, ibv_port_state state);
int set_port_lid(ibv_context* context, uint8_t port, uint16_t lid);
int set_gid(ibv_context* context, uint8_t port, int index, const ibv_gid& gid);
int device_fatal(ibv_context* context);
int raise_qp_event(ibv_qp* qp, ibv_event_type type);
int raise_srq_event(ibv_srq* srq, ibv_event_type type);
int raise_cq_event(ibv_cq* cq, ibv_event_type type);

}  // namespace verbfault::interposer::calls
