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
};

inline constexpr std::array<Window, 3> kWindows = {Window::completion_between_poll_and_arm,
                                                   Window::event_for_several_completions,
                                                   Window::event_with_empty_cq};

constexpr std::string_view window_name(Window window) {
  switch (window) {
    case Window::completion_between_poll_and_arm:
      return "completion_between_poll_and_arm";
    case Window::event_for_several_completions:
      return "event_for_several_completions";
    case Window::event_with_empty_cq:
      return "event_with_empty_cq";
  }
  return "unknown";
}

}  // namespace verbfault
