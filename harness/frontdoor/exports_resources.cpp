// Exported calls that create, change and destroy verbs objects.
#include "exports.h"

#include <cerrno>

using namespace verbfault;
using frontdoor::created;
using frontdoor::fail_create;
using frontdoor::simulated;
using interposer::Fields;

namespace {

Fields cq_fields(int cqe, const ibv_comp_channel* channel) {
  return {{"cqe", cqe}, {"channel", channel != nullptr}};
}

Fields qp_fields(const ibv_qp_init_attr* attr) {
  return {{"qp_type", attr->qp_type},
          {"max_send_wr", attr->cap.max_send_wr},
          {"max_recv_wr", attr->cap.max_recv_wr},
          {"sq_sig_all", attr->sq_sig_all},
          {"srq", attr->srq != nullptr}};
}

}  // namespace

extern "C" {

ibv_pd* ibv_alloc_pd(ibv_context* context) {
  if (int error = interposer::before_call(Verb::alloc_pd, context))
    return fail_create<ibv_pd>(error);
  ibv_pd* pd = simulated(context) ? sim::alloc_pd(context)
                                  : VERBFAULT_REAL(ibv_alloc_pd, "IBVERBS_1.1")(context);
  return created(pd, ObjectKind::pd, context, "alloc_pd");
}

int ibv_dealloc_pd(ibv_pd* pd) {
  int result =
      simulated(pd) ? sim::dealloc_pd(pd) : VERBFAULT_REAL(ibv_dealloc_pd, "IBVERBS_1.1")(pd);
  interposer::destroyed(pd, "dealloc_pd", result);
  return result;
}

ibv_mr* ibv_reg_mr(ibv_pd* pd, void* addr, size_t length, int access) {
  if (frontdoor::RealCall::inside())
    return VERBFAULT_REAL(ibv_reg_mr, "IBVERBS_1.1")(pd, addr, length, access);
  if (int error = interposer::before_call(Verb::reg_mr, pd)) return fail_create<ibv_mr>(error);
  ibv_mr* mr = nullptr;
  if (simulated(pd)) {
    mr = sim::reg_mr(pd, addr, length, reinterpret_cast<uintptr_t>(addr),
                     static_cast<unsigned>(access));
  } else {
    frontdoor::RealCall real;
    mr = VERBFAULT_REAL(ibv_reg_mr, "IBVERBS_1.1")(pd, addr, length, access);
  }
  return created(mr, ObjectKind::mr, pd, "reg_mr", {{"length", length}, {"access", access}});
}

ibv_mr* ibv_reg_mr_iova(ibv_pd* pd, void* addr, size_t length, uint64_t iova, int access) {
  if (frontdoor::RealCall::inside())
    return VERBFAULT_REAL(ibv_reg_mr_iova, "IBVERBS_1.7")(pd, addr, length, iova, access);
  if (int error = interposer::before_call(Verb::reg_mr, pd)) return fail_create<ibv_mr>(error);
  ibv_mr* mr = nullptr;
  if (simulated(pd)) {
    mr = sim::reg_mr(pd, addr, length, iova, static_cast<unsigned>(access));
  } else {
    frontdoor::RealCall real;
    mr = VERBFAULT_REAL(ibv_reg_mr_iova, "IBVERBS_1.7")(pd, addr, length, iova, access);
  }
  return created(mr, ObjectKind::mr, pd, "reg_mr", {{"length", length}, {"access", access}});
}

ibv_mr* ibv_reg_mr_iova2(ibv_pd* pd, void* addr, size_t length, uint64_t iova,
                         unsigned int access) {
  if (frontdoor::RealCall::inside())
    return VERBFAULT_REAL(ibv_reg_mr_iova2, "IBVERBS_1.8")(pd, addr, length, iova, access);
  if (int error = interposer::before_call(Verb::reg_mr, pd)) return fail_create<ibv_mr>(error);
  ibv_mr* mr = nullptr;
  if (simulated(pd)) {
    mr = sim::reg_mr(pd, addr, length, iova, access);
  } else {
    frontdoor::RealCall real;
    mr = VERBFAULT_REAL(ibv_reg_mr_iova2, "IBVERBS_1.8")(pd, addr, length, iova, access);
  }
  return created(mr, ObjectKind::mr, pd, "reg_mr", {{"length", length}, {"access", access}});
}

ibv_mr* ibv_reg_dmabuf_mr(ibv_pd* pd, uint64_t offset, size_t length, uint64_t iova, int fd,
                          int access) {
  // dma-buf memory belongs to a kernel driver: not simulated.
  if (simulated(pd)) {
    errno = EOPNOTSUPP;
    return nullptr;
  }
  return VERBFAULT_REAL(ibv_reg_dmabuf_mr, "IBVERBS_1.12")(pd, offset, length, iova, fd, access);
}

int ibv_rereg_mr(ibv_mr* mr, int flags, ibv_pd* pd, void* addr, size_t length, int access) {
  if (simulated(mr)) return sim::rereg_mr(mr, flags, pd, addr, length, access);
  return VERBFAULT_REAL(ibv_rereg_mr, "IBVERBS_1.1")(mr, flags, pd, addr, length, access);
}

int ibv_dereg_mr(ibv_mr* mr) {
  int result = simulated(mr) ? sim::dereg_mr(mr) : VERBFAULT_REAL(ibv_dereg_mr, "IBVERBS_1.1")(mr);
  interposer::destroyed(mr, "dereg_mr", result);
  return result;
}

ibv_mr* ibv_import_mr(ibv_pd* pd, uint32_t mr_handle) {
  if (simulated(pd)) {
    errno = EOPNOTSUPP;
    return nullptr;
  }
  return VERBFAULT_REAL(ibv_import_mr, "IBVERBS_1.10")(pd, mr_handle);
}

void ibv_unimport_mr(ibv_mr* mr) {
  // Nothing simulated is ever imported; a real import is released by libibverbs.
  if (!simulated(mr)) VERBFAULT_REAL(ibv_unimport_mr, "IBVERBS_1.10")(mr);
}

void ibv_unimport_pd(ibv_pd* pd) {
  if (!simulated(pd)) VERBFAULT_REAL(ibv_unimport_pd, "IBVERBS_1.10")(pd);
}

void ibv_unimport_dm(ibv_dm* dm) {
  if (!simulated(dm)) VERBFAULT_REAL(ibv_unimport_dm, "IBVERBS_1.13")(dm);
}

ibv_ah* ibv_create_ah(ibv_pd* pd, ibv_ah_attr* attr) {
  if (int error = interposer::before_call(Verb::create_ah, pd)) return fail_create<ibv_ah>(error);
  ibv_ah* ah = simulated(pd) ? sim::create_ah(pd, attr)
                             : VERBFAULT_REAL(ibv_create_ah, "IBVERBS_1.1")(pd, attr);
  return created(ah, ObjectKind::ah, pd, "create_ah");
}

int ibv_destroy_ah(ibv_ah* ah) {
  int result =
      simulated(ah) ? sim::destroy_ah(ah) : VERBFAULT_REAL(ibv_destroy_ah, "IBVERBS_1.1")(ah);
  interposer::destroyed(ah, "destroy_ah", result);
  return result;
}

int ibv_init_ah_from_wc(ibv_context* context, uint8_t port, ibv_wc* wc, ibv_grh* grh,
                        ibv_ah_attr* attr) {
  if (simulated(context)) return sim::init_ah_from_wc(context, port, wc, grh, attr);
  return VERBFAULT_REAL(ibv_init_ah_from_wc, "IBVERBS_1.1")(context, port, wc, grh, attr);
}

ibv_ah* ibv_create_ah_from_wc(ibv_pd* pd, ibv_wc* wc, ibv_grh* grh, uint8_t port) {
  if (int error = interposer::before_call(Verb::create_ah, pd)) return fail_create<ibv_ah>(error);
  ibv_ah* ah = nullptr;
  if (simulated(pd)) {
    ibv_ah_attr attr;
    if (sim::init_ah_from_wc(pd->context, port, wc, grh, &attr) == 0)
      ah = sim::create_ah(pd, &attr);
  } else {
    ah = VERBFAULT_REAL(ibv_create_ah_from_wc, "IBVERBS_1.1")(pd, wc, grh, port);
  }
  return created(ah, ObjectKind::ah, pd, "create_ah_from_wc");
}

ibv_comp_channel* ibv_create_comp_channel(ibv_context* context) {
  if (int error = interposer::before_call(Verb::create_comp_channel, context))
    return fail_create<ibv_comp_channel>(error);
  ibv_comp_channel* channel = simulated(context)
                                  ? sim::create_comp_channel(context)
                                  : VERBFAULT_REAL(ibv_create_comp_channel, "IBVERBS_1.0")(context);
  return created(channel, ObjectKind::channel, context, "create_comp_channel");
}

int ibv_destroy_comp_channel(ibv_comp_channel* channel) {
  interposer::unwrap_fd(channel);
  int result = simulated(channel)
                   ? sim::destroy_comp_channel(channel)
                   : VERBFAULT_REAL(ibv_destroy_comp_channel, "IBVERBS_1.0")(channel);
  interposer::destroyed(channel, "destroy_comp_channel", result);
  return result;
}

ibv_cq* ibv_create_cq(ibv_context* context, int cqe, void* cq_context, ibv_comp_channel* channel,
                      int comp_vector) {
  if (int error = interposer::before_call(Verb::create_cq, context))
    return fail_create<ibv_cq>(error);
  ibv_cq* cq = nullptr;
  if (simulated(context)) {
    cq = sim::create_cq(context, cqe, cq_context, channel, comp_vector);
  } else {
    interposer::FdLoan channel_fd(channel);
    interposer::FdLoan async_fd(context);
    cq = VERBFAULT_REAL(ibv_create_cq, "IBVERBS_1.1")(context, cqe, cq_context, channel,
                                                      comp_vector);
  }
  return created(cq, ObjectKind::cq, context, "create_cq", cq_fields(cqe, channel));
}

int ibv_resize_cq(ibv_cq* cq, int cqe) {
  if (int error = interposer::before_call(Verb::resize_cq, cq)) return error;
  int result = simulated(cq) ? sim::resize_cq(cq, cqe)
                             : VERBFAULT_REAL(ibv_resize_cq, "IBVERBS_1.1")(cq, cqe);
  interposer::traced(cq, "resize_cq", {{"cqe", cqe}, {"ret", result}});
  return result;
}

int ibv_destroy_cq(ibv_cq* cq) {
  interposer::destroying(cq);
  int result =
      simulated(cq) ? sim::destroy_cq(cq) : VERBFAULT_REAL(ibv_destroy_cq, "IBVERBS_1.1")(cq);
  interposer::destroyed(cq, "destroy_cq", result);
  return result;
}

ibv_srq* ibv_create_srq(ibv_pd* pd, ibv_srq_init_attr* attr) {
  if (int error = interposer::before_call(Verb::create_srq, pd)) return fail_create<ibv_srq>(error);
  ibv_srq* srq = nullptr;
  if (simulated(pd)) {
    srq = sim::create_srq(pd, attr);
  } else {
    interposer::FdLoan async_fd(pd->context);
    srq = VERBFAULT_REAL(ibv_create_srq, "IBVERBS_1.1")(pd, attr);
  }
  return created(srq, ObjectKind::srq, pd, "create_srq", {{"max_wr", attr->attr.max_wr}});
}

int ibv_modify_srq(ibv_srq* srq, ibv_srq_attr* attr, int mask) {
  if (int error = interposer::before_call(Verb::modify_srq, srq)) return error;
  int result = simulated(srq) ? sim::modify_srq(srq, attr, mask)
                              : VERBFAULT_REAL(ibv_modify_srq, "IBVERBS_1.1")(srq, attr, mask);
  interposer::traced(srq, "modify_srq", {{"mask", mask}, {"ret", result}});
  return result;
}

int ibv_query_srq(ibv_srq* srq, ibv_srq_attr* attr) {
  if (simulated(srq)) return sim::query_srq(srq, attr);
  return VERBFAULT_REAL(ibv_query_srq, "IBVERBS_1.1")(srq, attr);
}

int ibv_destroy_srq(ibv_srq* srq) {
  interposer::destroying(srq);
  int result =
      simulated(srq) ? sim::destroy_srq(srq) : VERBFAULT_REAL(ibv_destroy_srq, "IBVERBS_1.1")(srq);
  interposer::destroyed(srq, "destroy_srq", result);
  return result;
}

ibv_qp* ibv_create_qp(ibv_pd* pd, ibv_qp_init_attr* attr) {
  if (int error = interposer::before_call(Verb::create_qp, pd)) return fail_create<ibv_qp>(error);
  ibv_qp* qp = nullptr;
  if (simulated(pd)) {
    qp = sim::create_qp(pd, attr);
  } else {
    interposer::FdLoan async_fd(pd->context);
    qp = VERBFAULT_REAL(ibv_create_qp, "IBVERBS_1.1")(pd, attr);
  }
  return created(qp, ObjectKind::qp, pd, "create_qp", qp_fields(attr));
}

int ibv_modify_qp(ibv_qp* qp, ibv_qp_attr* attr, int mask) {
  if (int error = interposer::before_call(Verb::modify_qp, qp)) return error;
  int result = simulated(qp) ? sim::modify_qp(qp, attr, mask)
                             : VERBFAULT_REAL(ibv_modify_qp, "IBVERBS_1.1")(qp, attr, mask);
  Fields fields = {{"mask", mask}};
  if (mask & IBV_QP_STATE) fields["state"] = attr->qp_state;
  fields["ret"] = result;
  interposer::traced(qp, "modify_qp", std::move(fields));
  if (result == 0) interposer::qp_modified(qp, *attr, mask);
  return result;
}

int ibv_query_qp(ibv_qp* qp, ibv_qp_attr* attr, int mask, ibv_qp_init_attr* init) {
  if (simulated(qp)) return sim::query_qp(qp, attr, mask, init);
  return VERBFAULT_REAL(ibv_query_qp, "IBVERBS_1.1")(qp, attr, mask, init);
}

int ibv_destroy_qp(ibv_qp* qp) {
  interposer::destroying(qp);
  int result =
      simulated(qp) ? sim::destroy_qp(qp) : VERBFAULT_REAL(ibv_destroy_qp, "IBVERBS_1.1")(qp);
  interposer::destroyed(qp, "destroy_qp", result);
  return result;
}

ibv_qp_ex* ibv_qp_to_qp_ex(ibv_qp* qp) {
  if (simulated(qp)) return sim::qp_to_qp_ex(qp);
  return VERBFAULT_REAL(ibv_qp_to_qp_ex, "IBVERBS_1.6")(qp);
}

int ibv_query_qp_data_in_order(ibv_qp* qp, ibv_wr_opcode op, uint32_t flags) {
  if (simulated(qp)) {
    // The simulated device places a message's data in order (v44 ABI: 1).
    (void)op;
    (void)flags;
    return 1;
  }
  return VERBFAULT_REAL(ibv_query_qp_data_in_order, "IBVERBS_1.14")(qp, op, flags);
}

int ibv_query_ece(ibv_qp* qp, ibv_ece* ece) {
  if (simulated(qp)) return EOPNOTSUPP;  // enhanced connection establishment: mlx5 only
  return VERBFAULT_REAL(ibv_query_ece, "IBVERBS_1.10")(qp, ece);
}

int ibv_set_ece(ibv_qp* qp, ibv_ece* ece) {
  if (simulated(qp)) return EOPNOTSUPP;
  return VERBFAULT_REAL(ibv_set_ece, "IBVERBS_1.10")(qp, ece);
}

int ibv_attach_mcast(ibv_qp* qp, const ibv_gid* gid, uint16_t lid) {
  if (simulated(qp)) return sim::attach_mcast(qp, gid, lid);
  return VERBFAULT_REAL(ibv_attach_mcast, "IBVERBS_1.1")(qp, gid, lid);
}

int ibv_detach_mcast(ibv_qp* qp, const ibv_gid* gid, uint16_t lid) {
  if (simulated(qp)) return sim::detach_mcast(qp, gid, lid);
  return VERBFAULT_REAL(ibv_detach_mcast, "IBVERBS_1.1")(qp, gid, lid);
}

}  // extern "C"
