// What the runtime checks remember of one verbs object (in the checkers'
// own table, by slot; guarded by the interposer lock like every member of
// Checkers).
#pragma once

#include <infiniband/verbs.h>

#include <cstdint>
#include <deque>
#include <map>

namespace verbfault::checkers {

struct ObjectChecks {
  // CQs: completion events through ibv_get_cq_event / ibv_ack_cq_events.
  std::uint64_t cq_events_taken = 0;
  std::uint64_t cq_events_acked = 0;
  bool used_with_events = false;     // an event was ever taken for it
  bool drained_since_event = false;  // an empty poll since the last event
  bool armed = false;                // a req_notify_cq since the last event taken
  std::uint64_t arm_depth = 0;       // completions it held at the last arm
  // Of those, the ones no poll since has returned (polls return the oldest
  // first): completions that arrive after the arm are not among them.
  std::uint64_t arm_unpolled = 0;
  bool polled_since_arm = false;   // any poll since the last arm
  bool drained_since_arm = false;  // an empty poll since the last arm
  bool last_poll_empty = false;    // its last poll returned nothing
  // Channels: the threads now waiting in ibv_get_cq_event on it.
  std::uint32_t cq_event_waiters = 0;
  // Async events about this object (CQ, QP, SRQ, or a context's port events).
  std::uint64_t async_taken = 0;
  std::uint64_t async_acked = 0;
  // QPs.
  std::uint32_t max_send_wr = 0;
  std::uint32_t max_recv_wr = 0;
  bool sq_sig_all = false;
  // Whether its CQs' capacity was judged (at its first posted WR: a QP
  // created and destroyed unused, as libraries probe a device's limits
  // with, can never overflow anything).
  bool capacity_judged = false;
  bool error_polled = false;            // one of its error completions was polled
  std::uint64_t posts_after_error = 0;  // posts since then, until a reset
  std::uint64_t unsignaled_run = 0;     // unsignaled sends in a row
  // QPs: the wr_ids whose latest completion was an error, with its status
  // (the most recent kRememberedFailures), for outcomes an application
  // reports.
  std::map<std::uint64_t, ibv_wc_status> failed;
  std::deque<std::uint64_t> failed_order;
};

}  // namespace verbfault::checkers
