// Calls that create, change and destroy verbs objects, routed to the
// simulated device or the real libibverbs.
#include "real_libibverbs.h"
#include "verbfault/sim/provider.h"
#include "verbs.h"

#include <cerrno>

namespace verbfault::provider {

ibv_pd* alloc_pd(ibv_context* context) {
  if (simulated(context)) return sim::alloc_pd(context);
  return VERBFAULT_REAL(ibv_alloc_pd, "IBVERBS_1.1")(context);
}

int dealloc_pd(ibv_pd* pd) {
  if (simulated(pd)) return sim::dealloc_pd(pd);
  return VERBFAULT_REAL(ibv_dealloc_pd, "IBVERBS_1.1")(pd);
}

// A real registration goes through libibverbs, which calls its own exports
// back (RealCall lets them through).
ibv_mr* reg_mr(ibv_pd* pd, void* addr, size_t length, int access) {
  if (simulated(pd))
    return sim::reg_mr(pd, addr, length, reinterpret_cast<uintptr_t>(addr),
                       static_cast<unsigned>(access));
  RealCall real;
  return VERBFAULT_REAL(ibv_reg_mr, "IBVERBS_1.1")(pd, addr, length, access);
}

ibv_mr* reg_mr_iova(ibv_pd* pd, void* addr, size_t length, uint64_t iova, int access) {
  if (simulated(pd)) return sim::reg_mr(pd, addr, length, iova, static_cast<unsigned>(access));
  RealCall real;
  return VERBFAULT_REAL(ibv_reg_mr_iova, "IBVERBS_1.7")(pd, addr, length, iova, access);
}

ibv_mr* reg_mr_iova2(ibv_pd* pd, void* addr, size_t length, uint64_t iova, unsigned int access) {
  if (simulated(pd)) return sim::reg_mr(pd, addr, length, iova, access);
  RealCall real;
  return VERBFAULT_REAL(ibv_reg_mr_iova2, "IBVERBS_1.8")(pd, addr, length, iova, access);
}

ibv_mr* reg_dmabuf_mr(ibv_pd* pd, uint64_t offset, size_t length, uint64_t iova, int fd,
                      int access) {
  // dma-buf memory belongs to a kernel driver: not simulated.
  if (simulated(pd)) {
    errno = EOPNOTSUPP;
    return nullptr;
  }
  return VERBFAULT_REAL(ibv_reg_dmabuf_mr, "IBVERBS_1.12")(pd, offset, length, iova, fd, access);
}

int rereg_mr(ibv_mr* mr, int flags, ibv_pd* pd, void* addr, size_t length, int access) {
  if (simulated(mr)) return sim::rereg_mr(mr, flags, pd, addr, length, access);
  return VERBFAULT_REAL(ibv_rereg_mr, "IBVERBS_1.1")(mr, flags, pd, addr, length, access);
}

int dereg_mr(ibv_mr* mr) {
  if (simulated(mr)) return sim::dereg_mr(mr);
  return VERBFAULT_REAL(ibv_dereg_mr, "IBVERBS_1.1")(mr);
}

ibv_mr* import_mr(ibv_pd* pd, uint32_t mr_handle) {
  if (simulated(pd)) return sim::import_mr(pd, mr_handle);
  return VERBFAULT_REAL(ibv_import_mr, "IBVERBS_1.10")(pd, mr_handle);
}

void unimport_mr(ibv_mr* mr) {
  if (simulated(mr)) return sim::unimport_mr(mr);
  VERBFAULT_REAL(ibv_unimport_mr, "IBVERBS_1.10")(mr);
}

void unimport_pd(ibv_pd* pd) {
  if (simulated(pd)) return sim::unimport_pd(pd);
  VERBFAULT_REAL(ibv_unimport_pd, "IBVERBS_1.10")(pd);
}

void unimport_dm(ibv_dm* dm) {
  if (!simulated(dm)) VERBFAULT_REAL(ibv_unimport_dm, "IBVERBS_1.13")(dm);
}

ibv_ah* create_ah(ibv_pd* pd, ibv_ah_attr* attr) {
  if (simulated(pd)) return sim::create_ah(pd, attr);
  return VERBFAULT_REAL(ibv_create_ah, "IBVERBS_1.1")(pd, attr);
}

int destroy_ah(ibv_ah* ah) {
  if (simulated(ah)) return sim::destroy_ah(ah);
  return VERBFAULT_REAL(ibv_destroy_ah, "IBVERBS_1.1")(ah);
}

int init_ah_from_wc(ibv_context* context, uint8_t port, ibv_wc* wc, ibv_grh* grh,
                    ibv_ah_attr* attr) {
  if (simulated(context)) return sim::init_ah_from_wc(context, port, wc, grh, attr);
  return VERBFAULT_REAL(ibv_init_ah_from_wc, "IBVERBS_1.1")(context, port, wc, grh, attr);
}

ibv_ah* create_ah_from_wc(ibv_pd* pd, ibv_wc* wc, ibv_grh* grh, uint8_t port) {
  if (!simulated(pd))
    return VERBFAULT_REAL(ibv_create_ah_from_wc, "IBVERBS_1.1")(pd, wc, grh, port);
  ibv_ah_attr attr;
  if (sim::init_ah_from_wc(pd->context, port, wc, grh, &attr) != 0) return nullptr;
  return sim::create_ah(pd, &attr);
}

ibv_comp_channel* create_comp_channel(ibv_context* context) {
  if (simulated(context)) return sim::create_comp_channel(context);
  return VERBFAULT_REAL(ibv_create_comp_channel, "IBVERBS_1.0")(context);
}

int destroy_comp_channel(ibv_comp_channel* channel) {
  if (simulated(channel)) return sim::destroy_comp_channel(channel);
  return VERBFAULT_REAL(ibv_destroy_comp_channel, "IBVERBS_1.0")(channel);
}

ibv_cq* create_cq(ibv_context* context, int cqe, void* cq_context, ibv_comp_channel* channel,
                  int comp_vector) {
  if (simulated(context)) return sim::create_cq(context, cqe, cq_context, channel, comp_vector);
  return VERBFAULT_REAL(ibv_create_cq, "IBVERBS_1.1")(context, cqe, cq_context, channel,
                                                      comp_vector);
}

int resize_cq(ibv_cq* cq, int cqe) {
  if (simulated(cq)) return sim::resize_cq(cq, cqe);
  return VERBFAULT_REAL(ibv_resize_cq, "IBVERBS_1.1")(cq, cqe);
}

int destroy_cq(ibv_cq* cq) {
  if (simulated(cq)) return sim::destroy_cq(cq);
  return VERBFAULT_REAL(ibv_destroy_cq, "IBVERBS_1.1")(cq);
}

ibv_srq* create_srq(ibv_pd* pd, ibv_srq_init_attr* attr) {
  if (simulated(pd)) return sim::create_srq(pd, attr);
  return VERBFAULT_REAL(ibv_create_srq, "IBVERBS_1.1")(pd, attr);
}

int modify_srq(ibv_srq* srq, ibv_srq_attr* attr, int mask) {
  if (simulated(srq)) return sim::modify_srq(srq, attr, mask);
  return VERBFAULT_REAL(ibv_modify_srq, "IBVERBS_1.1")(srq, attr, mask);
}

int query_srq(ibv_srq* srq, ibv_srq_attr* attr) {
  if (simulated(srq)) return sim::query_srq(srq, attr);
  return VERBFAULT_REAL(ibv_query_srq, "IBVERBS_1.1")(srq, attr);
}

int destroy_srq(ibv_srq* srq) {
  if (simulated(srq)) return sim::destroy_srq(srq);
  return VERBFAULT_REAL(ibv_destroy_srq, "IBVERBS_1.1")(srq);
}

ibv_qp* create_qp(ibv_pd* pd, ibv_qp_init_attr* attr) {
  if (simulated(pd)) return sim::create_qp(pd, attr);
  return VERBFAULT_REAL(ibv_create_qp, "IBVERBS_1.1")(pd, attr);
}

int modify_qp(ibv_qp* qp, ibv_qp_attr* attr, int mask) {
  if (simulated(qp)) return sim::modify_qp(qp, attr, mask);
  return VERBFAULT_REAL(ibv_modify_qp, "IBVERBS_1.1")(qp, attr, mask);
}

int query_qp(ibv_qp* qp, ibv_qp_attr* attr, int mask, ibv_qp_init_attr* init) {
  if (simulated(qp)) return sim::query_qp(qp, attr, mask, init);
  return VERBFAULT_REAL(ibv_query_qp, "IBVERBS_1.1")(qp, attr, mask, init);
}

int destroy_qp(ibv_qp* qp) {
  if (simulated(qp)) return sim::destroy_qp(qp);
  return VERBFAULT_REAL(ibv_destroy_qp, "IBVERBS_1.1")(qp);
}

ibv_qp_ex* qp_to_qp_ex(ibv_qp* qp) {
  if (simulated(qp)) return sim::qp_to_qp_ex(qp);
  return VERBFAULT_REAL(ibv_qp_to_qp_ex, "IBVERBS_1.6")(qp);
}

int query_qp_data_in_order(ibv_qp* qp, ibv_wr_opcode op, uint32_t flags) {
  // The simulated device places a message's data in order (v44 ABI: 1).
  if (simulated(qp)) return 1;
  return VERBFAULT_REAL(ibv_query_qp_data_in_order, "IBVERBS_1.14")(qp, op, flags);
}

int query_ece(ibv_qp* qp, ibv_ece* ece) {
  if (simulated(qp)) return EOPNOTSUPP;  // enhanced connection establishment: mlx5 only
  return VERBFAULT_REAL(ibv_query_ece, "IBVERBS_1.10")(qp, ece);
}

int set_ece(ibv_qp* qp, ibv_ece* ece) {
  if (simulated(qp)) return EOPNOTSUPP;
  return VERBFAULT_REAL(ibv_set_ece, "IBVERBS_1.10")(qp, ece);
}

int attach_mcast(ibv_qp* qp, const ibv_gid* gid, uint16_t lid) {
  if (simulated(qp)) return sim::attach_mcast(qp, gid, lid);
  return VERBFAULT_REAL(ibv_attach_mcast, "IBVERBS_1.1")(qp, gid, lid);
}

int detach_mcast(ibv_qp* qp, const ibv_gid* gid, uint16_t lid) {
  if (simulated(qp)) return sim::detach_mcast(qp, gid, lid);
  return VERBFAULT_REAL(ibv_detach_mcast, "IBVERBS_1.1")(qp, gid, lid);
}

}  // namespace verbfault::provider
