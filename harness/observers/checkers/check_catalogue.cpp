#include "check_catalogue.h"

#include <algorithm>
#include <array>
#include <stdexcept>

namespace verbfault::checkers {

namespace {

constexpr std::array<CheckInfo, 23> kChecks = {{
    {"ack.cq_events_unacked_at_destroy",
     "ibv_destroy_cq with completion events taken by ibv_get_cq_event and not acknowledged "
     "(libibverbs waits forever)",
     "F08"},
    {"ack.cq_events_overacked",
     "ibv_ack_cq_events acknowledges more events than were taken for that CQ (acks given to "
     "the wrong CQ)",
     "F07"},
    {"ack.async_unacked_at_destroy",
     "an object destroyed while async events about it are not acknowledged (libibverbs waits "
     "forever)",
     ""},
    {"ack.async_overacked", "ibv_ack_async_event for an event that was not taken, or twice", ""},
    {"poll.wait_without_drain",
     "waiting for a completion event while the CQ still holds completions: one event covers "
     "several completions, and no event comes for these (simulated device only: needs what a "
     "CQ holds)",
     "F12, F17", true, true},
    {"poll.stranded_between_poll_and_arm",
     "a completion that arrived after the last empty poll and before the re-arm is not polled "
     "before waiting: no event will report it (simulated device only: needs what a CQ holds)",
     "F10, F11", true, true},
    {"event.not_rearmed",
     "waiting on a channel after an event without re-arming its CQ (e.g. after an event with "
     "no completion behind it): no further event comes from that CQ",
     "F13"},
    {"error.post_to_qp_in_err",
     "posting again and again to a QP after polling its error completion (16 posts, no reset): "
     "everything is flushed until the QP is reset",
     "F18"},
    {"error.poisoned_field_used",
     "a work request built from fields of an error completion that ibv_poll_cq(3) leaves "
     "undefined (the harness poisons them with 0xa5)",
     "F02, F03, F04, F05"},
    {"error.failure_reported_as_success",
     "the application reports a work request as done (Session::report_outcome) whose "
     "completion was an error or a flush",
     "F01, F05"},
    {"resource.cq_too_small",
     "the QPs completing into a CQ can have more work outstanding than the CQ holds: an "
     "overflow waiting to happen (judged at a QP's first posted WR: a probe QP destroyed "
     "unused is no finding)",
     "F16"},
    {"resource.unsignaled_sends_fill_queue",
     "max_send_wr unsignaled sends in a row: without a signaled one the send queue is never "
     "reclaimed",
     ""},
    {"resource.destroy_order",
     "a destroy refused with EBUSY because objects that depend on it still exist, or "
     "ibv_close_device with objects alive",
     ""},
    {"resource.leak_at_exit",
     "verbs objects still alive when the program exits (reported, not failed: a program may "
     "leave them to the kernel)",
     "", false},
    {"cm.destroy_id_with_qp",
     "rdma_destroy_id on an id whose QP is still alive (rdma_destroy_id(3): free the QP first)",
     ""},
    {"cm.destroy_id_unacked_events",
     "rdma_destroy_id on an id with events taken by rdma_get_cm_event and not acknowledged "
     "(rdma_destroy_id(3): ack all related events first; librdmacm waits for them forever: the "
     "run ends with exit status 122 when no other thread could ack)",
     ""},
    {"cm.event_acked_twice",
     "rdma_ack_cm_event of an event already acknowledged (librdmacm frees an event at its ack: "
     "a second ack is a double free, and counts an event of its id twice, so rdma_destroy_id "
     "can return while an event is still held); the harness refuses it with EINVAL",
     ""},
    {"cm.post_after_disconnect",
     "a work request posted on a QP after the application read DISCONNECTED for the rdma_cm id "
     "that connected it: it can only fail",
     ""},
    {"cm.private_data_too_long",
     "connect, accept or reject with more private data than the CM message carries (IBA 12.6: "
     "56 bytes for an RC connect after rdma_cm's header, 196 accept, 148 reject; UD 180 and "
     "136)",
     ""},
    {"liveness.blocked_forever",
     "blocked in ibv_get_cq_event, ibv_get_async_event or rdma_get_cm_event when no event can "
     "ever arrive (for the CM: named on the file's first connection id, with every id of the "
     "file and its state, cm_id#3 (disconnect/dreq_rcvd); the run ends with exit status 122; "
     "simulated device only: needs what is due "
     "on the device)",
     "F09", true, true},
    {"liveness.spinning",
     "polling an empty CQ over and over (2^20 empty polls in a row) when no completion can "
     "ever arrive (the run ends with "
     "exit status 122; simulated device only: needs what is due on the device)",
     "", true, true},
    {"liveness.posting_to_qp_in_err",
     "posting to a QP in ERR over and over (2^16 posts after an error completion, no reset): "
     "every post is flushed, so the loop never ends (the run ends with exit status 122)",
     "F18"},
    {"liveness.hang",
     "no verbs call made progress for the hang time (--hang-after, default 10 s) while every "
     "thread waited or spun in a call the harness sees: on any provider (the run ends with "
     "exit status 122)",
     ""},
}};

// "ack.cq_events_overacked", a family "ack.*", or every check "*.*".
bool matches(std::string_view pattern, std::string_view id) {
  if (pattern == "*.*") return true;
  if (pattern.size() >= 2 && pattern.substr(pattern.size() - 2) == ".*")
    return id.substr(0, pattern.size() - 1) == pattern.substr(0, pattern.size() - 1);
  return pattern == id;
}

std::string known_ids() {
  std::string ids;
  for (const CheckInfo& check : kChecks) ids += (ids.empty() ? "" : ", ") + std::string(check.id);
  return ids;
}

}  // namespace

std::span<const CheckInfo> catalogue() {
  return kChecks;
}

bool fails_run(std::string_view id) {
  for (const CheckInfo& check : kChecks)
    if (check.id == id) return check.fails_run;
  return true;
}

bool needs_simulated_device(std::string_view id) {
  for (const CheckInfo& check : kChecks)
    if (check.id == id) return check.needs_simulated_device;
  return false;
}

bool known(std::string_view id) {
  return std::any_of(kChecks.begin(), kChecks.end(),
                     [&](const CheckInfo& check) { return check.id == id; });
}

CheckSelection CheckSelection::parse(std::string_view text, std::string_view source) {
  CheckSelection selection;
  auto set_all = [&](bool on, std::string_view pattern) {
    for (const CheckInfo& check : kChecks) {
      if (!matches(pattern, check.id)) continue;
      if (on)
        selection.enabled_.emplace(check.id);
      else
        selection.enabled_.erase(std::string(check.id));
    }
  };
  set_all(true, "*.*");
  std::size_t start = 0;
  while (start <= text.size()) {
    std::size_t comma = text.find(',', start);
    if (comma == std::string_view::npos) comma = text.size();
    const std::string_view item = text.substr(start, comma - start);
    start = comma + 1;
    if (item.empty()) continue;
    if (item == "all" || item == "off") {
      set_all(item == "all", "*.*");
      continue;
    }
    const char sign = item.front();
    const std::string_view pattern = item.substr(1);
    const bool any = std::any_of(kChecks.begin(), kChecks.end(),
                                 [&](const CheckInfo& c) { return matches(pattern, c.id); });
    if ((sign != '-' && sign != '+') || !any)
      throw std::runtime_error(
          std::string(source) + "='" + std::string(text) + "': '" + std::string(item) +
          "': expected off, all, or -ID / +ID / -FAMILY.* with an ID of: " + known_ids());
    set_all(sign == '+', pattern);
  }
  return selection;
}

bool CheckSelection::enabled(std::string_view id) const {
  return enabled_.contains(id);
}

}  // namespace verbfault::checkers
