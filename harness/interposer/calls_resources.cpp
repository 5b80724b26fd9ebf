// The interposer's side of the exported calls that create, change and
// destroy verbs objects: the hooks around the provider layer's call
// (calls.h).
#include "calls.h"
#include "opcodes.h"

#include "verbs.h"

namespace verbfault::interposer::calls {

ibv_pd* alloc_pd(Run& run, ibv_context* context, const void* caller) {
  if (int error = interposer::before_call(run, Verb::alloc_pd, context))
    return fail_create<ibv_pd>(error);
  ibv_pd* pd = created(run, provider::alloc_pd(context), ObjectKind::pd, context, "alloc_pd");
  interposer::kept_by_library(run, pd, caller);
  return pd;
}

int dealloc_pd(Run& run, ibv_pd* pd) {
  int result = provider::dealloc_pd(pd);
  interposer::destroyed(run, pd, "dealloc_pd", result);
  return result;
}

// libibverbs' own registration calls come back here while it runs
// (provider::RealCall): they go straight through, one application call is
// one traced call.
ibv_mr* reg_mr(Run& run, ibv_pd* pd, void* addr, size_t length, int access) {
  if (provider::RealCall::inside()) return provider::reg_mr(pd, addr, length, access);
  if (int error = interposer::before_call(run, Verb::reg_mr, pd)) return fail_create<ibv_mr>(error);
  return created(run, provider::reg_mr(pd, addr, length, access), ObjectKind::mr, pd, "reg_mr",
                 {{"length", length}, {"access", access}});
}

ibv_mr* reg_mr_iova(Run& run, ibv_pd* pd, void* addr, size_t length, uint64_t iova, int access) {
  if (provider::RealCall::inside()) return provider::reg_mr_iova(pd, addr, length, iova, access);
  if (int error = interposer::before_call(run, Verb::reg_mr, pd)) return fail_create<ibv_mr>(error);
  return created(run, provider::reg_mr_iova(pd, addr, length, iova, access), ObjectKind::mr, pd,
                 "reg_mr", {{"length", length}, {"access", access}});
}

ibv_mr* reg_mr_iova2(Run& run, ibv_pd* pd, void* addr, size_t length, uint64_t iova, unsigned int access) {
  if (provider::RealCall::inside()) return provider::reg_mr_iova2(pd, addr, length, iova, access);
  if (int error = interposer::before_call(run, Verb::reg_mr, pd)) return fail_create<ibv_mr>(error);
  return created(run, provider::reg_mr_iova2(pd, addr, length, iova, access), ObjectKind::mr, pd,
                 "reg_mr", {{"length", length}, {"access", access}});
}

ibv_mr* reg_dmabuf_mr(Run&, ibv_pd* pd, uint64_t offset, size_t length, uint64_t iova, int fd,
                      int access) {
  return provider::reg_dmabuf_mr(pd, offset, length, iova, fd, access);
}

int rereg_mr(Run&, ibv_mr* mr, int flags, ibv_pd* pd, void* addr, size_t length, int access) {
  return provider::rereg_mr(mr, flags, pd, addr, length, access);
}

int dereg_mr(Run& run, ibv_mr* mr) {
  int result = provider::dereg_mr(mr);
  interposer::destroyed(run, mr, "dereg_mr", result);
  return result;
}

ibv_mr* import_mr(Run& run, ibv_pd* pd, uint32_t mr_handle) {
  return created(run, provider::import_mr(pd, mr_handle), ObjectKind::mr, pd, "import_mr",
                 {{"handle", mr_handle}});
}

// The handle is released, the object stays (it belongs to the context it
// was imported from): the name goes with the handle.
void unimport_mr(Run& run, ibv_mr* mr) {
  provider::unimport_mr(mr);
  interposer::destroyed(run, mr, "unimport_mr", 0);
}

void unimport_pd(Run& run, ibv_pd* pd) {
  provider::unimport_pd(pd);
  interposer::destroyed(run, pd, "unimport_pd", 0);
}

void unimport_dm(Run&, ibv_dm* dm) {
  provider::unimport_dm(dm);
}

ibv_ah* create_ah(Run& run, ibv_pd* pd, ibv_ah_attr* attr) {
  if (int error = interposer::before_call(run, Verb::create_ah, pd)) return fail_create<ibv_ah>(error);
  return created(run, provider::create_ah(pd, attr), ObjectKind::ah, pd, "create_ah");
}

int destroy_ah(Run& run, ibv_ah* ah) {
  int result = provider::destroy_ah(ah);
  interposer::destroyed(run, ah, "destroy_ah", result);
  return result;
}

int init_ah_from_wc(Run&, ibv_context* context, uint8_t port, ibv_wc* wc, ibv_grh* grh,
                    ibv_ah_attr* attr) {
  return provider::init_ah_from_wc(context, port, wc, grh, attr);
}

ibv_ah* create_ah_from_wc(Run& run, ibv_pd* pd, ibv_wc* wc, ibv_grh* grh, uint8_t port) {
  if (int error = interposer::before_call(run, Verb::create_ah, pd)) return fail_create<ibv_ah>(error);
  return created(run, provider::create_ah_from_wc(pd, wc, grh, port), ObjectKind::ah, pd,
                 "create_ah_from_wc");
}

ibv_comp_channel* create_comp_channel(Run& run, ibv_context* context) {
  if (int error = interposer::before_call(run, Verb::create_comp_channel, context))
    return fail_create<ibv_comp_channel>(error);
  return created(run, provider::create_comp_channel(context), ObjectKind::channel, context,
                 "create_comp_channel");
}

int destroy_comp_channel(Run& run, ibv_comp_channel* channel) {
  interposer::destroying(run, channel);
  interposer::unwrap_fd(run, channel);
  int result = provider::destroy_comp_channel(channel);
  interposer::destroyed(run, channel, "destroy_comp_channel", result);
  return result;
}

ibv_cq* create_cq(Run& run, ibv_context* context, int cqe, void* cq_context, ibv_comp_channel* channel,
                  int comp_vector) {
  if (int error = interposer::before_call(run, Verb::create_cq, context))
    return fail_create<ibv_cq>(error);
  ibv_cq* cq = nullptr;
  {
    interposer::FdLoan channel_fd(run, channel);
    interposer::FdLoan async_fd(run, context);
    cq = provider::create_cq(context, cqe, cq_context, channel, comp_vector);
  }
  return created(run, cq, ObjectKind::cq, context, "create_cq",
                 {{"cqe", cqe}, {"channel", channel != nullptr}});
}

int resize_cq(Run& run, ibv_cq* cq, int cqe) {
  if (int error = interposer::before_call(run, Verb::resize_cq, cq)) return error;
  int result = provider::resize_cq(cq, cqe);
  interposer::traced(run, cq, "resize_cq", {{"cqe", cqe}, {"ret", result}});
  return result;
}

int destroy_cq(Run& run, ibv_cq* cq) {
  interposer::destroying(run, cq);
  int result = provider::destroy_cq(cq);
  interposer::destroyed(run, cq, "destroy_cq", result);
  return result;
}

ibv_srq* create_srq(Run& run, ibv_pd* pd, ibv_srq_init_attr* attr) {
  if (int error = interposer::before_call(run, Verb::create_srq, pd)) return fail_create<ibv_srq>(error);
  ibv_srq* srq = nullptr;
  {
    interposer::FdLoan async_fd(run, pd->context);
    srq = provider::create_srq(pd, attr);
  }
  created(run, srq, ObjectKind::srq, pd, "create_srq", {{"max_wr", attr->attr.max_wr}});
  if (srq != nullptr) interposer::sge_limits(run, srq, 0, attr->attr.max_sge);
  return srq;
}

int modify_srq(Run& run, ibv_srq* srq, ibv_srq_attr* attr, int mask) {
  if (int error = interposer::before_call(run, Verb::modify_srq, srq)) return error;
  int result = provider::modify_srq(srq, attr, mask);
  interposer::traced(run, srq, "modify_srq", {{"mask", mask}, {"ret", result}});
  return result;
}

int query_srq(Run&, ibv_srq* srq, ibv_srq_attr* attr) {
  return provider::query_srq(srq, attr);
}

int destroy_srq(Run& run, ibv_srq* srq) {
  interposer::destroying(run, srq);
  int result = provider::destroy_srq(srq);
  interposer::destroyed(run, srq, "destroy_srq", result);
  return result;
}

ibv_qp* create_qp(Run& run, ibv_pd* pd, ibv_qp_init_attr* attr) {
  if (int error = interposer::before_call(run, Verb::create_qp, pd)) return fail_create<ibv_qp>(error);
  ibv_qp* qp = nullptr;
  {
    interposer::FdLoan async_fd(run, pd->context);  // the QP's async event file (a real provider)
    qp = provider::create_qp(pd, attr);
  }
  created(run, qp, ObjectKind::qp, pd, "create_qp",
          {{"qp_type", attr->qp_type},
           {"max_send_wr", attr->cap.max_send_wr},
           {"max_recv_wr", attr->cap.max_recv_wr},
           {"sq_sig_all", attr->sq_sig_all},
           {"srq", attr->srq != nullptr}});
  if (qp != nullptr) interposer::sge_limits(run, qp, attr->cap.max_send_sge, attr->cap.max_recv_sge);
  return qp;
}

int modify_qp(Run& run, ibv_qp* qp, ibv_qp_attr* attr, int mask) {
  if (int error = interposer::before_call(run, Verb::modify_qp, qp)) return error;
  const int refused = interposer::cm_refused_modify(run, qp, *attr, mask);
  int result = refused != 0 ? refused : provider::modify_qp(qp, attr, mask);
  if (mask & IBV_QP_STATE)
    interposer::traced(run, 
        qp, "modify_qp",
        {{"mask", mask}, {"state", record::raw_value(attr->qp_state)}, {"ret", result}});
  else
    interposer::traced(run, qp, "modify_qp", {{"mask", mask}, {"ret", result}});
  if (result == 0) interposer::qp_modified(run, qp, *attr, mask);
  return result;
}

int query_qp(Run&, ibv_qp* qp, ibv_qp_attr* attr, int mask, ibv_qp_init_attr* init) {
  return provider::query_qp(qp, attr, mask, init);
}

int destroy_qp(Run& run, ibv_qp* qp) {
  interposer::destroying(run, qp);
  int result = provider::destroy_qp(qp);
  interposer::destroyed(run, qp, "destroy_qp", result);
  return result;
}

ibv_qp_ex* qp_to_qp_ex(Run&, ibv_qp* qp) {
  return provider::qp_to_qp_ex(qp);
}

int query_qp_data_in_order(Run&, ibv_qp* qp, ibv_wr_opcode op, uint32_t flags) {
  return provider::query_qp_data_in_order(qp, op, flags);
}

int query_ece(Run&, ibv_qp* qp, ibv_ece* ece) {
  return provider::query_ece(qp, ece);
}

int set_ece(Run&, ibv_qp* qp, ibv_ece* ece) {
  return provider::set_ece(qp, ece);
}

int attach_mcast(Run&, ibv_qp* qp, const ibv_gid* gid, uint16_t lid) {
  return provider::attach_mcast(qp, gid, lid);
}

int detach_mcast(Run&, ibv_qp* qp, const ibv_gid* gid, uint16_t lid) {
  return provider::detach_mcast(qp, gid, lid);
}

}  // namespace verbfault::interposer::calls
