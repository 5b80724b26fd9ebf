#include "completions.h"

#include "opcodes.h"

#include <cstring>

namespace verbfault::interposer {

Side side_of(const ibv_wc& wc) {
  return (wc.opcode & IBV_WC_RECV) ? Side::recv : Side::send;
}

void poison(ibv_wc& wc, ibv_wc_status status) {
  const std::uint64_t wr_id = wc.wr_id;
  const std::uint32_t qp_num = wc.qp_num;
  std::memset(&wc, kPoisonByte, sizeof wc);
  wc.wr_id = wr_id;
  wc.qp_num = qp_num;
  wc.status = status;
  wc.vendor_err = kInjectedVendorErr;
}

ibv_qp* rewrite(State& state, ibv_wc& wc) {
  Tracked* qp = state.registry.find_qp(wc.qp_num);
  if (qp == nullptr) return nullptr;
  const Side side = side_of(wc);
  if (wc.status == IBV_WC_SUCCESS || wc.status == IBV_WC_WR_FLUSH_ERR) {
    for (auto it = qp->doomed.begin(); it != qp->doomed.end(); ++it) {
      if (it->side != side || it->wr_id != wc.wr_id) continue;
      const ibv_wc_status status = it->status;
      qp->doomed.erase(it);
      if (qp->injected_error) {
        poison(wc, IBV_WC_WR_FLUSH_ERR);  // already in ERR: flushed like the rest
        return nullptr;
      }
      poison(wc, status);
      qp->injected_error = true;
      return static_cast<ibv_qp*>(const_cast<void*>(qp->handle));
    }
  }
  // After an injected error the QP is in ERR: what completes later is a
  // flush, even if the provider had already executed it.
  if (qp->injected_error && wc.status == IBV_WC_SUCCESS) poison(wc, IBV_WC_WR_FLUSH_ERR);
  return nullptr;
}

std::optional<Decision> decide_delay(State& state, Tracked& cq, const ibv_wc& wc) {
  Opportunity completion;
  completion.site = Site::completion;
  completion.object = &cq;
  completion.qp = state.registry.find_qp(wc.qp_num);
  const bool success = wc.status == IBV_WC_SUCCESS;
  completion.opcode = success ? record::opcode_of(wc.opcode) : std::nullopt;
  completion.side = success ? std::optional(side_of(wc)) : std::nullopt;
  completion.wr_id = wc.wr_id;
  return state.engine.decide(completion, {FaultKind::delayed_completion});
}

}  // namespace verbfault::interposer
