// Simulated time: nothing in the device model reads the wall clock.
#pragma once

#include <cstdint>

namespace verbfault::sim {

// Nanoseconds of virtual time. The clock only moves when the application
// gives the device a chance to: an empty poll or a wait that would block
// (see docs/device.md, "Virtual clock"). It then jumps straight to the
// next deadline, so a 655 ms RNR timer costs one poll, not 655 ms.
class VirtualClock {
 public:
  uint64_t now() const { return now_ns_; }
  void advance_to(uint64_t t) {
    if (t > now_ns_) now_ns_ = t;
  }

 private:
  uint64_t now_ns_ = 0;
};

// IBA 9.7.5.2.8 (RNR NAK timer field encoding), in nanoseconds, indexed by
// the 5-bit value of min_rnr_timer: 0 means 655.36 ms.
uint64_t rnr_timer_ns(uint8_t min_rnr_timer);
// IBA 9.7.6.1.3: Local ACK timeout = 4.096 us * 2^timeout; 0 means infinite
// (returns 0).
uint64_t transport_timeout_ns(uint8_t timeout);

}  // namespace verbfault::sim
