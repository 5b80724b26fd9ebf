// The race windows a run can reach (issue 34's "sometimes" assertions): the
// moments a completion race needs, which a clean run may or may not have
// exercised. The checkers mark the first time a run reaches each with a
// trace record {"obj":..,"window":NAME}; `verbfault sweep` counts, per
// window, the seeds that reached it and names those none did.
#pragma once

#include <array>
#include <cstdint>
#include <string_view>

namespace verbfault {

enum class Window : std::uint8_t {
  // A completion arrived after the last poll of its CQ found it empty and
  // before the CQ was armed: the arm raises no event for it
  // (ibv_req_notify_cq(3)); a loop that sleeps without polling again hangs.
  completion_between_poll_and_arm,
  // An event was taken while two or more completions waited: a loop that
  // takes one completion per event leaves the rest (perftest #137).
  event_for_several_completions,
  // An event was taken while the CQ held none: an earlier poll took the
  // completion that raised it.
  event_with_empty_cq,
  // A thread waited in ibv_get_cq_event on a channel while another
  // destroyed the channel, one of its CQs or a QP of those, or joined a
  // thread: a teardown that does not wake the waiter first (an event, a
  // flag it checks after a wake-up) never ends.
  channel_wait_during_teardown,
};

inline constexpr std::array<Window, 4> kWindows = {
    Window::completion_between_poll_and_arm, Window::event_for_several_completions,
    Window::event_with_empty_cq, Window::channel_wait_during_teardown};

constexpr std::string_view window_name(Window window) {
  switch (window) {
    case Window::completion_between_poll_and_arm:
      return "completion_between_poll_and_arm";
    case Window::event_for_several_completions:
      return "event_for_several_completions";
    case Window::event_with_empty_cq:
      return "event_with_empty_cq";
    case Window::channel_wait_during_teardown:
      return "channel_wait_during_teardown";
  }
  return "unknown";
}

}  // namespace verbfault
