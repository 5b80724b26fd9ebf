#include "device_profile.h"

namespace verbfault::sim {

uint64_t round_size(Rounding rule, uint64_t asked) {
  if (asked == 0) return 0;
  switch (rule) {
    case Rounding::kExact:
      return asked;
    case Rounding::kPowerOfTwo: {
      uint64_t size = 1;
      while (size < asked) size <<= 1;
      return size;
    }
    case Rounding::kPowerOfTwoMinusOne: {
      uint64_t slots = 1;
      while (slots - 1 < asked) slots <<= 1;
      return slots - 1;
    }
  }
  return asked;
}

}  // namespace verbfault::sim
