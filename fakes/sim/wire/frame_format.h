// The bytes on a connection: a hello from the connecting side, then frames,
// each a length and that many bytes. Both ends are on one host: host byte
// order.
#pragma once

#include <cstddef>
#include <cstdint>

namespace verbfault::sim::wire {

// First on every connection, from the side that connected: who it is.
struct Hello {
  static constexpr uint64_t kMagic = 0x3130'4552'4957'4656;  // "VFWIRE01" read as bytes
  uint64_t magic;
  uint32_t member;       // the sender's index
  uint32_t reserved;     // 0
  uint64_t incarnation;  // the sender's join number (status_table.h)
};
static_assert(sizeof(Hello) == 24);

// Before each frame: its length in bytes (up to kMaxFrameBytes). A uint64:
// frames may be longer than 4 GiB one day, and 4 more bytes per frame are
// nothing next to a syscall.
using FrameLength = uint64_t;
inline constexpr std::size_t kFrameHeaderBytes = sizeof(FrameLength);

}  // namespace verbfault::sim::wire
