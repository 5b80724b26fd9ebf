#include "device_profile.h"

#include <bit>

namespace verbfault::sim {

uint64_t round_size(Rounding rule, uint64_t asked) {
  if (asked == 0) return 0;
  switch (rule) {
    case Rounding::kExact:
      return asked;
    case Rounding::kPowerOfTwo:
      return std::bit_ceil(asked);
    case Rounding::kPowerOfTwoMinusOne:  // the smallest 2^n - 1 that holds it
      return std::bit_ceil(asked + 1) - 1;
  }
  return asked;
}

}  // namespace verbfault::sim
