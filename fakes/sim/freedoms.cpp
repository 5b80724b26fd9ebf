#include "freedoms.h"

#include <algorithm>

namespace verbfault::sim {

namespace {

// splitmix64's finalizer: 64 well-mixed bits from any input.
std::uint64_t mix(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

}  // namespace

void Freedoms::set_seed(std::optional<std::uint64_t> seed) {
  seed_ = seed;
  next_cq_ = 0;
  for (std::uint64_t kind = 0; kind < kind_keys_.size(); ++kind)
    kind_keys_[kind] = seed ? mix(*seed ^ kind << 56) : 0;
}

// mix(mix(mix(seed ^ kind << 56) ^ cq) ^ counter).
std::uint64_t Freedoms::draw(Kind kind, std::uint32_t cq, std::uint64_t counter) const {
  return mix(mix(kind_keys_[static_cast<std::size_t>(kind)] ^ cq) ^ counter);
}

// ibv_poll_cq(3): "the first num_entries (or all available completions if
// the CQ contains fewer than this number)". Not drawn: a poll that held
// some back would look like the CQ's last to an application that re-arms,
// polls until a poll returns fewer than asked and waits, and no event
// reports a completion the CQ held when it was re-armed.
int Freedoms::poll_count(std::uint32_t, std::uint64_t, int asked, int available) const {
  return std::min(asked, available);
}

std::size_t Freedoms::next_completion(std::uint32_t cq, std::uint64_t pick,
                                      std::size_t choices) const {
  if (!drawn() || choices <= 1) return 0;
  return draw(Kind::next_completion, cq, pick) % choices;
}

bool Freedoms::event_on_arm(std::uint32_t cq, std::uint64_t arm) const {
  return drawn() && (draw(Kind::event_on_arm, cq, arm) & 1) != 0;
}

}  // namespace verbfault::sim
