#include "virtual_clock.h"

#include <array>

namespace verbfault::sim {

uint64_t rnr_timer_ns(uint8_t min_rnr_timer) {
  // Microseconds, from the table of IBA 9.7.5.2.8 (also in ibv_modify_qp(3)).
  static constexpr std::array<double, 32> kMicroseconds = {
      655360, 10,    20,    30,    40,    60,     80,     120,    160,    240,   320,
      480,    640,   960,   1280,  1920,  2560,   3840,   5120,   7680,   10240, 15360,
      20480,  30720, 40960, 61440, 81920, 122880, 163840, 245760, 327680, 491520};
  return static_cast<uint64_t>(kMicroseconds[min_rnr_timer & 31] * 1000.0);
}

uint64_t transport_timeout_ns(uint8_t timeout) {
  if (timeout == 0) return 0;
  if (timeout > 31) timeout = 31;
  return 4096ull << timeout;
}

}  // namespace verbfault::sim
