// Exported calls that create, change and destroy verbs objects: each
// forwards to the interposer (interposer/calls.h).
#include "exports.h"
#include "thread_calls.h"

using namespace verbfault;
namespace thread_calls = verbfault::interposer::thread_calls;

extern "C" {

ibv_pd* ibv_alloc_pd(ibv_context* context) {
  thread_calls::verbs_point();
  return interposer::calls::alloc_pd(context, __builtin_return_address(0));
}

int ibv_dealloc_pd(ibv_pd* pd) {
  thread_calls::verbs_point();
  return interposer::calls::dealloc_pd(pd);
}

ibv_mr* ibv_reg_mr(ibv_pd* pd, void* addr, size_t length, int access) {
  thread_calls::verbs_point();
  return interposer::calls::reg_mr(pd, addr, length, access);
}

ibv_mr* ibv_reg_mr_iova(ibv_pd* pd, void* addr, size_t length, uint64_t iova, int access) {
  thread_calls::verbs_point();
  return interposer::calls::reg_mr_iova(pd, addr, length, iova, access);
}

ibv_mr* ibv_reg_mr_iova2(ibv_pd* pd, void* addr, size_t length, uint64_t iova,
                         unsigned int access) {
  return interposer::calls::reg_mr_iova2(pd, addr, length, iova, access);
}

ibv_mr* ibv_reg_dmabuf_mr(ibv_pd* pd, uint64_t offset, size_t length, uint64_t iova, int fd,
                          int access) {
  thread_calls::verbs_point();
  return interposer::calls::reg_dmabuf_mr(pd, offset, length, iova, fd, access);
}

int ibv_rereg_mr(ibv_mr* mr, int flags, ibv_pd* pd, void* addr, size_t length, int access) {
  thread_calls::verbs_point();
  return interposer::calls::rereg_mr(mr, flags, pd, addr, length, access);
}

int ibv_dereg_mr(ibv_mr* mr) {
  thread_calls::verbs_point();
  return interposer::calls::dereg_mr(mr);
}

ibv_mr* ibv_import_mr(ibv_pd* pd, uint32_t mr_handle) {
  thread_calls::verbs_point();
  return interposer::calls::import_mr(pd, mr_handle);
}

void ibv_unimport_mr(ibv_mr* mr) {
  thread_calls::verbs_point();
  interposer::calls::unimport_mr(mr);
}

void ibv_unimport_pd(ibv_pd* pd) {
  thread_calls::verbs_point();
  interposer::calls::unimport_pd(pd);
}

void ibv_unimport_dm(ibv_dm* dm) {
  thread_calls::verbs_point();
  interposer::calls::unimport_dm(dm);
}

ibv_ah* ibv_create_ah(ibv_pd* pd, ibv_ah_attr* attr) {
  thread_calls::verbs_point();
  return interposer::calls::create_ah(pd, attr);
}

int ibv_destroy_ah(ibv_ah* ah) {
  thread_calls::verbs_point();
  return interposer::calls::destroy_ah(ah);
}

int ibv_init_ah_from_wc(ibv_context* context, uint8_t port, ibv_wc* wc, ibv_grh* grh,
                        ibv_ah_attr* attr) {
  thread_calls::verbs_point();
  return interposer::calls::init_ah_from_wc(context, port, wc, grh, attr);
}

ibv_ah* ibv_create_ah_from_wc(ibv_pd* pd, ibv_wc* wc, ibv_grh* grh, uint8_t port) {
  thread_calls::verbs_point();
  return interposer::calls::create_ah_from_wc(pd, wc, grh, port);
}

ibv_comp_channel* ibv_create_comp_channel(ibv_context* context) {
  thread_calls::verbs_point();
  return interposer::calls::create_comp_channel(context);
}

int ibv_destroy_comp_channel(ibv_comp_channel* channel) {
  thread_calls::verbs_point();
  return interposer::calls::destroy_comp_channel(channel);
}

ibv_cq* ibv_create_cq(ibv_context* context, int cqe, void* cq_context, ibv_comp_channel* channel,
                      int comp_vector) {
  thread_calls::verbs_point();
  return interposer::calls::create_cq(context, cqe, cq_context, channel, comp_vector);
}

int ibv_resize_cq(ibv_cq* cq, int cqe) {
  thread_calls::verbs_point();
  return interposer::calls::resize_cq(cq, cqe);
}

int ibv_destroy_cq(ibv_cq* cq) {
  thread_calls::verbs_point();
  return interposer::calls::destroy_cq(cq);
}

ibv_srq* ibv_create_srq(ibv_pd* pd, ibv_srq_init_attr* attr) {
  thread_calls::verbs_point();
  return interposer::calls::create_srq(pd, attr);
}

int ibv_modify_srq(ibv_srq* srq, ibv_srq_attr* attr, int mask) {
  thread_calls::verbs_point();
  return interposer::calls::modify_srq(srq, attr, mask);
}

int ibv_query_srq(ibv_srq* srq, ibv_srq_attr* attr) {
  thread_calls::verbs_point();
  return interposer::calls::query_srq(srq, attr);
}

int ibv_destroy_srq(ibv_srq* srq) {
  thread_calls::verbs_point();
  return interposer::calls::destroy_srq(srq);
}

ibv_qp* ibv_create_qp(ibv_pd* pd, ibv_qp_init_attr* attr) {
  thread_calls::verbs_point();
  return interposer::calls::create_qp(pd, attr);
}

int ibv_modify_qp(ibv_qp* qp, ibv_qp_attr* attr, int mask) {
  thread_calls::verbs_point();
  return interposer::calls::modify_qp(qp, attr, mask);
}

int ibv_query_qp(ibv_qp* qp, ibv_qp_attr* attr, int mask, ibv_qp_init_attr* init) {
  thread_calls::verbs_point();
  return interposer::calls::query_qp(qp, attr, mask, init);
}

int ibv_destroy_qp(ibv_qp* qp) {
  thread_calls::verbs_point();
  return interposer::calls::destroy_qp(qp);
}

ibv_qp_ex* ibv_qp_to_qp_ex(ibv_qp* qp) {
  thread_calls::verbs_point();
  return interposer::calls::qp_to_qp_ex(qp);
}

int ibv_query_qp_data_in_order(ibv_qp* qp, ibv_wr_opcode op, uint32_t flags) {
  thread_calls::verbs_point();
  return interposer::calls::query_qp_data_in_order(qp, op, flags);
}

int ibv_query_ece(ibv_qp* qp, ibv_ece* ece) {
  thread_calls::verbs_point();
  return interposer::calls::query_ece(qp, ece);
}

int ibv_set_ece(ibv_qp* qp, ibv_ece* ece) {
  thread_calls::verbs_point();
  return interposer::calls::set_ece(qp, ece);
}

int ibv_attach_mcast(ibv_qp* qp, const ibv_gid* gid, uint16_t lid) {
  thread_calls::verbs_point();
  return interposer::calls::attach_mcast(qp, gid, lid);
}

int ibv_detach_mcast(ibv_qp* qp, const ibv_gid* gid, uint16_t lid) {
  thread_calls::verbs_point();
  return interposer::calls::detach_mcast(qp, gid, lid);
}

}  // extern "C"
