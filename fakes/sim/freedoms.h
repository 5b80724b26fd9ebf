// The simulated device's legal freedoms. Where the verbs leave a choice to
// the provider, a real device makes it by timing; the simulated device
// draws it from the run's seed, so a seed sweep explores behaviours a
// correct application must survive, and a seed replays them exactly:
//   * the order of completions of different work queues that enter one CQ
//     in the same step (IBA orders completions per work queue only);
//   * an extra completion event when a CQ is armed while it still holds
//     completions (as hardware that compares the arm with its producer
//     index does; ibv_get_cq_event(3) warns of events without completions).
// Without a seed the device takes the canonical choice: arrival order, no
// extra event. How many completions one ibv_poll_cq returns is not a
// freedom: ibv_poll_cq(3) returns "the first num_entries (or all available
// completions if the CQ contains fewer than this number)", so a poll that
// returns fewer than asked has emptied the CQ (the kernel's ib_poll_cq:
// "If the return value is non-negative and < num_entries, then the CQ was
// emptied"). Fewer while more wait is the partial_poll fault.
//
// Every draw is a pure function of (seed, freedom, CQ ordinal, per-CQ
// counter): no generator state is shared between objects. The ordinal
// counts the CQs created since the seed was set, so a verbfault::Session
// replays exactly what a process run under the same seed does.
// Guarded by Fabric::mutex.
#pragma once

#include <array>
#include <cstdint>
#include <optional>

namespace verbfault::sim {

class Freedoms {
 public:
  void set_seed(std::optional<std::uint64_t> seed);
  bool drawn() const { return seed_.has_value(); }
  // The ordinal of a CQ being created.
  std::uint32_t next_cq() { return next_cq_++; }

  // How many completions a poll returns: min(asked, available), seed or
  // not (ibv_poll_cq(3)); not drawn.
  int poll_count(std::uint32_t cq, std::uint64_t poll, int asked, int available) const;
  // Which of `choices` completions (each the oldest of its work queue)
  // comes next (canonical: 0, the oldest).
  std::size_t next_completion(std::uint32_t cq, std::uint64_t pick, std::size_t choices) const;
  // Whether arming a non-empty CQ fires an event at once (canonical: no).
  bool event_on_arm(std::uint32_t cq, std::uint64_t arm) const;

 private:
  enum class Kind : std::uint64_t { poll_count = 1, next_completion = 2, event_on_arm = 3 };
  std::uint64_t draw(Kind kind, std::uint32_t cq, std::uint64_t counter) const;

  std::optional<std::uint64_t> seed_;
  // The first step of draw() for each kind, which depends on the seed
  // only: computed when it is set.
  std::array<std::uint64_t, 4> kind_keys_{};
  std::uint32_t next_cq_ = 0;
};

}  // namespace verbfault::sim
