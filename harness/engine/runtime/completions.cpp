#include "completions.h"

#include "opcodes.h"

#include <cstring>

namespace verbfault::engine {

std::optional<Side> side_of(const record::Object& cq, const record::Object* qp, const ibv_wc& wc) {
  if (wc.status == IBV_WC_SUCCESS)
    return (record::raw_value(wc.opcode) & IBV_WC_RECV) ? Side::recv : Side::send;
  if (qp == nullptr || qp->send_cq == qp->recv_cq) return std::nullopt;
  if (cq.handle == qp->send_cq) return Side::send;
  if (cq.handle == qp->recv_cq) return Side::recv;
  return std::nullopt;
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

ibv_qp* rewrite(FaultEngine& engine, const record::Object& cq, record::ObjectId qp_id, ibv_wc& wc) {
  if (!qp_id.valid()) return nullptr;
  ObjectFaults* qp = &engine.faults(qp_id.slot);
  if (wc.status == IBV_WC_SUCCESS || wc.status == IBV_WC_WR_FLUSH_ERR) {
    // A flush on a QP whose queues share `cq` matches the first doomed WR
    // with its wr_id: the two could only be told apart if the application
    // gave a send and a receive of the QP the same wr_id.
    const std::optional<Side> side =
        qp->doomed.empty() ? std::nullopt : side_of(cq, qp->object, wc);
    for (auto it = qp->doomed.begin(); it != qp->doomed.end(); ++it) {
      if ((side && it->side != *side) || it->wr_id != wc.wr_id) continue;
      const ibv_wc_status status = it->status;
      qp->doomed.erase(it);
      if (qp->injected_error) {
        poison(wc, IBV_WC_WR_FLUSH_ERR);  // already in ERR: flushed like the rest
        return nullptr;
      }
      poison(wc, status);
      qp->injected_error = true;
      return static_cast<ibv_qp*>(const_cast<void*>(qp->object->handle));
    }
  }
  // After an injected error the QP is in ERR: what completes later is a
  // flush, even if the provider had already executed it.
  if (qp->injected_error && wc.status == IBV_WC_SUCCESS) poison(wc, IBV_WC_WR_FLUSH_ERR);
  return nullptr;
}

int take_due(ObjectFaults& cq, ibv_wc* wc, int limit, bool& may_poll) {
  int count = 0;
  while (count < limit && cq.held_polls == 0 && !cq.held.empty()) {
    wc[count++] = cq.held.front();
    cq.held.erase(cq.held.begin());
  }
  may_poll = cq.held.empty();
  return count;
}

bool released_by_empty_poll(ObjectFaults& cq) {
  if (cq.held.empty() || cq.held_polls == 0) return false;
  return --cq.held_polls == 0;
}

int apply_to_polled(FaultEngine& engine, const record::Object& cq, ibv_wc* wc,
                    const record::ObjectId* qps, int from, int to, std::vector<ibv_qp*>& to_error) {
  // A real provider's error completions get the poison of the fields
  // ibv_poll_cq(3) leaves undefined (all but wr_id, status, qp_num and
  // vendor_err), as the simulated device's have it: an application that
  // reads them (F04: the opcode of a flush deciding send or receive) goes
  // wrong on every provider, not only where the provider's leftovers
  // happen to mislead it. The provider's vendor_err is kept.
  if (!cq.simulated)
    for (int i = from; i < to; ++i)
      if (wc[i].status != IBV_WC_SUCCESS) {
        const std::uint32_t vendor_err = wc[i].vendor_err;
        poison(wc[i], wc[i].status);
        wc[i].vendor_err = vendor_err;
      }
  // Rewrites only where something can be rewritten: an injected error on
  // some QP, or a delay rule.
  if (!engine.may_rewrite_completions && !engine.has_rules(Site::completion)) return to;
  for (int i = from; i < to; ++i) {
    if (ibv_qp* qp = rewrite(engine, cq, qps[i], wc[i])) to_error.push_back(qp);
    auto delay = decide_delay(engine, cq, qps[i], wc[i]);
    if (!delay) continue;
    // This completion and the ones behind it stay invisible until `polls`
    // polls of the CQ have come back empty (order within the CQ is kept).
    engine.record_fault(cq, *delay, "effect",
                        {{"wr_id", wc[i].wr_id}, {"polls", *delay->rule->polls}});
    // The ones behind it were polled from the provider now: they get their
    // rewrites now too (a flush after an injected error stays a flush).
    for (int j = i + 1; j < to; ++j)
      if (ibv_qp* qp = rewrite(engine, cq, qps[j], wc[j])) to_error.push_back(qp);
    ObjectFaults& faults = engine.faults(cq);
    faults.held.assign(wc + i, wc + to);
    faults.held_polls = *delay->rule->polls;
    return i;
  }
  return to;
}

std::optional<Decision> decide_delay(FaultEngine& engine, const record::Object& cq,
                                     record::ObjectId qp, const ibv_wc& wc) {
  Opportunity completion;
  completion.site = Site::completion;
  completion.object = &cq;
  completion.qp = qp.valid() ? engine.faults(qp.slot).object : nullptr;
  const bool success = wc.status == IBV_WC_SUCCESS;
  completion.opcode = success ? record::opcode_of(wc.opcode) : std::nullopt;
  completion.side = success ? side_of(cq, completion.qp, wc) : std::nullopt;
  completion.wr_id = wc.wr_id;
  return engine.decide(completion, {FaultKind::delayed_completion});
}

}  // namespace verbfault::engine
