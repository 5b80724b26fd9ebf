// Calls that create, change and destroy verbs objects: forwarded to the
// private simulator unchanged. What the simulator does not model fails as
// it does behind the front door (EOPNOTSUPP).
#include "double.h"

#include "verbfault/sim/provider.h"

#include <cerrno>

using namespace verbfault;

extern "C" {

ibv_pd* ibv_alloc_pd(ibv_context* context) {
  return sim::alloc_pd(context);
}

int ibv_dealloc_pd(ibv_pd* pd) {
  return sim::dealloc_pd(pd);
}

ibv_mr* ibv_reg_mr(ibv_pd* pd, void* addr, size_t length, int access) {
  return sim::reg_mr(pd, addr, length, reinterpret_cast<uintptr_t>(addr),
                     static_cast<unsigned>(access));
}

ibv_mr* ibv_reg_mr_iova(ibv_pd* pd, void* addr, size_t length, uint64_t iova, int access) {
  return sim::reg_mr(pd, addr, length, iova, static_cast<unsigned>(access));
}

ibv_mr* ibv_reg_mr_iova2(ibv_pd* pd, void* addr, size_t length, uint64_t iova,
                         unsigned int access) {
  return sim::reg_mr(pd, addr, length, iova, access);
}

ibv_mr* ibv_reg_dmabuf_mr(ibv_pd* pd, uint64_t offset, size_t length, uint64_t iova, int fd,
                          int access) {
  (void)pd;
  (void)offset;
  (void)length;
  (void)iova;
  (void)fd;
  (void)access;
  errno = EOPNOTSUPP;
  return nullptr;
}

int ibv_rereg_mr(ibv_mr* mr, int flags, ibv_pd* pd, void* addr, size_t length, int access) {
  return sim::rereg_mr(mr, flags, pd, addr, length, access);
}

int ibv_dereg_mr(ibv_mr* mr) {
  return sim::dereg_mr(mr);
}

ibv_mr* ibv_import_mr(ibv_pd* pd, uint32_t mr_handle) {
  (void)pd;
  (void)mr_handle;
  errno = EOPNOTSUPP;
  return nullptr;
}

// Nothing is ever imported: nothing to release.
void ibv_unimport_mr(ibv_mr* mr) {
  (void)mr;
}
void ibv_unimport_pd(ibv_pd* pd) {
  (void)pd;
}
void ibv_unimport_dm(ibv_dm* dm) {
  (void)dm;
}

ibv_ah* ibv_create_ah(ibv_pd* pd, ibv_ah_attr* attr) {
  return sim::create_ah(pd, attr);
}

int ibv_destroy_ah(ibv_ah* ah) {
  return sim::destroy_ah(ah);
}

int ibv_init_ah_from_wc(ibv_context* context, uint8_t port, ibv_wc* wc, ibv_grh* grh,
                        ibv_ah_attr* attr) {
  return sim::init_ah_from_wc(context, port, wc, grh, attr);
}

ibv_ah* ibv_create_ah_from_wc(ibv_pd* pd, ibv_wc* wc, ibv_grh* grh, uint8_t port) {
  ibv_ah_attr attr;
  if (sim::init_ah_from_wc(pd->context, port, wc, grh, &attr) != 0) return nullptr;
  return sim::create_ah(pd, &attr);
}

ibv_cq* ibv_create_cq(ibv_context* context, int cqe, void* cq_context, ibv_comp_channel* channel,
                      int comp_vector) {
  if (!verbfault::provider_double::channel_fd_is_providers(channel) ||
      !verbfault::provider_double::async_fd_is_providers(context)) {
    errno = EBADF;
    return nullptr;
  }
  return sim::create_cq(context, cqe, cq_context, channel, comp_vector);
}

int ibv_resize_cq(ibv_cq* cq, int cqe) {
  return sim::resize_cq(cq, cqe);
}

int ibv_destroy_cq(ibv_cq* cq) {
  return sim::destroy_cq(cq);
}

ibv_srq* ibv_create_srq(ibv_pd* pd, ibv_srq_init_attr* attr) {
  if (!verbfault::provider_double::async_fd_is_providers(pd->context)) {
    errno = EBADF;
    return nullptr;
  }
  return sim::create_srq(pd, attr);
}

int ibv_modify_srq(ibv_srq* srq, ibv_srq_attr* attr, int mask) {
  return sim::modify_srq(srq, attr, mask);
}

int ibv_query_srq(ibv_srq* srq, ibv_srq_attr* attr) {
  return sim::query_srq(srq, attr);
}

int ibv_destroy_srq(ibv_srq* srq) {
  return sim::destroy_srq(srq);
}

ibv_qp* ibv_create_qp(ibv_pd* pd, ibv_qp_init_attr* attr) {
  if (!verbfault::provider_double::async_fd_is_providers(pd->context)) {
    errno = EBADF;
    return nullptr;
  }
  return sim::create_qp(pd, attr);
}

int ibv_modify_qp(ibv_qp* qp, ibv_qp_attr* attr, int mask) {
  return sim::modify_qp(qp, attr, mask);
}

int ibv_query_qp(ibv_qp* qp, ibv_qp_attr* attr, int mask, ibv_qp_init_attr* init) {
  return sim::query_qp(qp, attr, mask, init);
}

int ibv_destroy_qp(ibv_qp* qp) {
  return sim::destroy_qp(qp);
}

ibv_qp_ex* ibv_qp_to_qp_ex(ibv_qp* qp) {
  return sim::qp_to_qp_ex(qp);
}

int ibv_query_qp_data_in_order(ibv_qp* qp, ibv_wr_opcode op, uint32_t flags) {
  // The simulator places a message's data in order (v44 ABI: 1).
  (void)qp;
  (void)op;
  (void)flags;
  return 1;
}

int ibv_query_ece(ibv_qp* qp, ibv_ece* ece) {
  (void)qp;
  (void)ece;
  return EOPNOTSUPP;
}

int ibv_set_ece(ibv_qp* qp, ibv_ece* ece) {
  (void)qp;
  (void)ece;
  return EOPNOTSUPP;
}

int ibv_attach_mcast(ibv_qp* qp, const ibv_gid* gid, uint16_t lid) {
  return sim::attach_mcast(qp, gid, lid);
}

int ibv_detach_mcast(ibv_qp* qp, const ibv_gid* gid, uint16_t lid) {
  return sim::detach_mcast(qp, gid, lid);
}

}  // extern "C"
