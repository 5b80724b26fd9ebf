// The provider layer: the one place that reaches a provider. Each call
// goes to the simulated device (fakes/sim) when its object belongs to one,
// else to the real libibverbs behind libverbfault.so, with the exact
// signature and return convention of the libibverbs call it stands for
// (see the man page of each ibv_* call). No hooks, no faults, no trace:
// the interposer calls these after deciding what to do, and the engine
// calls them to drive a provider into a fault's state (modify_qp to ERR).
#pragma once

#include <infiniband/verbs.h>

#include <cstddef>
#include <cstdint>

// The real libibverbs signatures, not the macros verbs.h puts in front of
// some of them.
#undef ibv_get_device_list
#undef ibv_query_port
#undef ibv_reg_mr
#undef ibv_reg_mr_iova

namespace verbfault::provider {

// ---- routing -------------------------------------------------------------
// An object belongs to a simulated device exactly when its context does.
bool simulated(const ibv_device* device);
bool simulated(const ibv_context* context);
template <class Object>
bool simulated(const Object* object) {
  return object != nullptr && simulated(object->context);
}

// libibverbs calls some of its own exported functions (its ibv_reg_mr
// calls ibv_reg_mr_iova2), and with libverbfault.so first in the lookup
// order those calls come back to the front door. While a thread is inside
// the real library (a RealCall is alive on it), such a call must go
// straight through: the application made one call, and the harness sees
// one.
class RealCall {
 public:
  RealCall() { ++depth(); }
  ~RealCall() { --depth(); }
  RealCall(const RealCall&) = delete;
  RealCall& operator=(const RealCall&) = delete;
  static bool inside() { return depth() > 0; }

 private:
  static int& depth() {
    thread_local int calls = 0;  // per thread: owned by the thread itself
    return calls;
  }
};

// ---- devices ---------------------------------------------------------------
// The real devices followed by the simulated ones; on a machine without
// RDMA in its kernel (libibverbs fails with ENOSYS) the simulated ones.
ibv_device** get_device_list(int* num_devices);
void free_device_list(ibv_device** list);
const char* get_device_name(ibv_device* device);
__be64 get_device_guid(ibv_device* device);
int get_device_index(ibv_device* device);
ibv_context* open_device(ibv_device* device);
ibv_context* import_device(int cmd_fd);
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
ibv_dm* import_dm(ibv_context* context, uint32_t dm_handle);

// ---- resources -------------------------------------------------------------
ibv_pd* alloc_pd(ibv_context* context);
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

// ---- events ----------------------------------------------------------------
int get_cq_event(ibv_comp_channel* channel, ibv_cq** cq, void** cq_context);
void ack_cq_events(ibv_cq* cq, unsigned int nevents);
int get_async_event(ibv_context* context, ibv_async_event* event);
void ack_async_event(ibv_async_event* event);

}  // namespace verbfault::provider
