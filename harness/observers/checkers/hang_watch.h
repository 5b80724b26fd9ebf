// The hang watchdog's judgement, for every provider (issue 17): a run is
// hung when no verbs call has made progress for `after` of wall-clock time
// while, at every look in that time, each application thread was waiting
// or spinning in a call the harness sees (a blocking ibv_get_cq_event or
// ibv_get_async_event, empty polls, a join, lock or sleep the thread
// scheduler models). A thread the harness cannot see (computing, reading a
// socket, blocked in a call it does not model) may still be about to do
// something: then nothing is concluded, however long it takes.
//
// On a real provider the harness cannot know that nothing will ever arrive
// (the exact liveness checks need the simulated device's view), so the
// judgement is by time; on the simulated device the exact diagnosis comes
// first, and this is the backstop (a peer process, a wait it does not
// model). Pure: the looks are given their time and what was seen, so the
// decision is tested without threads or clocks.
//
// Owner: the watchdog thread, the only caller.
#pragma once

#include <cstdint>
#include <string>

namespace verbfault::checkers {

// The default of VERBFAULT_HANG_AFTER / --hang-after, in seconds: well
// under a CI job's per-test timeout, well over any pause of a correct
// program that waits only on its own verbs calls.
inline constexpr double kDefaultHangAfterSeconds = 10.0;

// VERBFAULT_HANG_AFTER's or --hang-after's value in ns: seconds as a
// decimal number ("10", "0.5"), 0 for no hang watchdog, at most 86400;
// throws std::runtime_error naming `source` and what was expected.
std::uint64_t parse_hang_after(const std::string& text, const std::string& source);

// One look of the watchdog.
struct HangLook {
  std::uint64_t wall_ns = 0;   // a monotonic wall clock
  std::uint64_t progress = 0;  // verbs calls that made progress so far (a count that only grows)
  // Every application thread waited or spun in a call the harness sees.
  bool in_sight = false;
};

class HangWatch {
 public:
  // after_ns 0: never hung (the watchdog is off).
  explicit HangWatch(std::uint64_t after_ns) : after_ns_(after_ns) {}

  // Whether the run is hung as of `look`: no progress, and every thread in
  // sight, since a look at least after_ns earlier.
  bool hung(const HangLook& look);
  // Wall-clock time the current quiet stretch has lasted (0 after a look
  // that saw progress or a thread out of sight).
  std::uint64_t quiet_ns(std::uint64_t wall_ns) const { return started_ ? wall_ns - since_ns_ : 0; }
  std::uint64_t after_ns() const { return after_ns_; }

 private:
  std::uint64_t after_ns_;
  bool started_ = false;
  std::uint64_t progress_ = 0;  // the count at the start of the quiet stretch
  std::uint64_t since_ns_ = 0;  // when it started
};

}  // namespace verbfault::checkers
