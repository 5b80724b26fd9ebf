#include "decision.h"

namespace verbfault::engine {

namespace {

// splitmix64's finalizer (Steele, Lea, Flood 2014): a bijection with full
// avalanche, so chained over the tuple every input bit reaches every
// output bit.
std::uint64_t mix(std::uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

constexpr std::uint64_t kGolden = 0x9e3779b97f4a7c15ull;  // 2^64 / phi

}  // namespace

std::uint64_t draw(std::uint64_t seed, std::uint32_t rule, std::uint64_t object_key,
                   std::uint64_t counter, std::uint64_t stream) {
  std::uint64_t h = mix(seed + kGolden);
  h = mix(h ^ (std::uint64_t{rule} + 1) * kGolden);
  h = mix(h ^ object_key);
  h = mix(h ^ counter);
  return mix(h ^ stream);
}

double unit_interval(std::uint64_t bits) {
  return static_cast<double>(bits >> 11) * 0x1.0p-53;
}

std::uint64_t below(std::uint64_t bits, std::uint64_t bound) {
  // Lemire's multiply-high: the high 64 bits of bits * bound, uniform up to
  // a bias below bound / 2^64.
  return static_cast<std::uint64_t>((static_cast<unsigned __int128>(bits) * bound) >> 64);
}

bool draws_below(double probability, std::uint32_t rule_index, std::uint64_t seed,
                 std::uint64_t object_key, std::uint64_t opportunity) {
  return unit_interval(draw(seed, rule_index, object_key, opportunity)) < probability;
}

}  // namespace verbfault::engine
