// The verb table's resource calls whose routing is not the plain one
// (routing.cpp): memory registration (the simulated device's one
// reg_mr takes the iova; a real one goes through libibverbs' own exports),
// dma-buf, device memory, ECE and the data-in-order query that the
// simulated device answers itself, and ibv_create_ah_from_wc.
#include "real_libibverbs.h"
#include "verbfault/sim/provider.h"
#include "verbs.h"

#include <cerrno>

namespace verbfault::provider {

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

void unimport_dm(ibv_dm* dm) {
  if (!simulated(dm)) VERBFAULT_REAL(ibv_unimport_dm, "IBVERBS_1.13")(dm);
}

ibv_ah* create_ah_from_wc(ibv_pd* pd, ibv_wc* wc, ibv_grh* grh, uint8_t port) {
  if (!simulated(pd))
    return VERBFAULT_REAL(ibv_create_ah_from_wc, "IBVERBS_1.1")(pd, wc, grh, port);
  ibv_ah_attr attr;
  if (sim::init_ah_from_wc(pd->context, port, wc, grh, &attr) != 0) return nullptr;
  return sim::create_ah(pd, &attr);
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

}  // namespace verbfault::provider
