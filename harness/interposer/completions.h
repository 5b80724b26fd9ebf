// What the interposer does to a completion a provider returned, whichever
// API polled it (ibv_poll_cq in trampolines.cpp, ibv_start_poll /
// ibv_next_poll in extended_cq_trampolines.cpp). Lock held for each call.
#pragma once

#include "fault_engine.h"
#include "state.h"

#include <infiniband/verbs.h>

#include <optional>

namespace verbfault::interposer {

// vendor_err of a completion the interposer turned into an error.
inline constexpr std::uint32_t kInjectedVendorErr = 0x1f0;
// Filler of the fields an error completion does not define (ibv_poll_cq(3));
// the same pattern the simulated device uses.
inline constexpr unsigned char kPoisonByte = 0xa5;

Side side_of(const ibv_wc& wc);
// Every field but wr_id and qp_num becomes the poison; then the status and
// the vendor syndrome of an injected error.
void poison(ibv_wc& wc, ibv_wc_status status);

// Applies the injected errors: a doomed WR's completion becomes its error,
// whatever the QP completes after it a flush. Returns the QP to drive into
// ERR when this completion became the injected error.
ibv_qp* rewrite(State& state, ibv_wc& wc);

// Whether a delayed_completion rule holds back this completion of `cq`.
std::optional<Decision> decide_delay(State& state, Tracked& cq, const ibv_wc& wc);

}  // namespace verbfault::interposer
