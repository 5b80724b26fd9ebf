// What the engine does to a completion a provider returned, whichever API
// polled it (ibv_poll_cq and ibv_start_poll / ibv_next_poll in the
// interposer's trampolines). Interposer lock held for each call.
#pragma once

#include "fault_engine.h"

#include <infiniband/verbs.h>

#include <optional>
#include <vector>

namespace verbfault::engine {

// vendor_err of a completion the interposer turned into an error.
inline constexpr std::uint32_t kInjectedVendorErr = 0x1f0;
// Filler of the fields an error completion does not define (ibv_poll_cq(3));
// the same pattern the simulated device uses.
inline constexpr unsigned char kPoisonByte = 0xa5;

// The queue a completion of `qp` (nullptr: not the process's) polled from
// `cq` came from. A successful completion says it by its opcode; an error
// completion's opcode is undefined (ibv_poll_cq(3)), so its queue is the
// one of its QP that completes into `cq`, and nothing when both do (the
// injected errors then match by wr_id alone: rewrite).
std::optional<Side> side_of(const record::Object& cq, const record::Object* qp, const ibv_wc& wc);
// Every field but wr_id and qp_num becomes the poison; then the status and
// the vendor syndrome of an injected error.
void poison(ibv_wc& wc, ibv_wc_status status);

// Applies the injected errors to a completion of `qp` (an invalid id: a QP
// the process does not own) polled from `cq`: a doomed WR's completion
// becomes its error, whatever the QP completes after it a flush. Returns
// the QP to drive into ERR when this completion became the injected error.
ibv_qp* rewrite(FaultEngine& engine, const record::Object& cq, record::ObjectId qp, ibv_wc& wc);

// Completions held back on `cq` by delayed_completion come before anything
// the provider returns, once released: moves up to `limit` of them into
// `wc` and returns how many. `may_poll`: nothing is held any more, so the
// provider may be polled behind them (order within the CQ is kept).
int take_due(ObjectFaults& cq, ibv_wc* wc, int limit, bool& may_poll);

// A poll of `cq` (ibv_poll_cq, ibv_start_poll) just came back empty: one
// of the empty polls delayed_completion holds its completions for. True
// when this one released them: they arrived just after it, before the
// polling thread's next call (its arm, in an event loop), and the next poll
// returns them. (The poll that held them counts when it came back empty.)
bool released_by_empty_poll(ObjectFaults& cq);

// What the engine does to the completions wc[from, to) a poll of `cq` just
// took from the provider (qps: their QPs' ids, by the same index): the
// injected errors' rewrites, and delayed_completion, which holds back one
// completion and every one behind it. Returns how many of wc[0, to) the
// application sees; the QPs an injected error drives into ERR are appended
// to `to_error` (the caller does that without the lock).
int apply_to_polled(FaultEngine& engine, const record::Object& cq, ibv_wc* wc,
                    const record::ObjectId* qps, int from, int to, std::vector<ibv_qp*>& to_error);

// Whether a delayed_completion rule holds back this completion of `cq`.
std::optional<Decision> decide_delay(FaultEngine& engine, const record::Object& cq,
                                     record::ObjectId qp, const ibv_wc& wc);

}  // namespace verbfault::engine
