// A set of file descriptors below kLimit that any thread may test without a
// lock, one atomic bit each: the harness's descriptors of a kind (the CM
// relays, the followed NETLINK_ROUTE sockets) are told apart from the
// program's on every read, write and close, where a lookup under a mutex
// would cost every call. A descriptor at or above kLimit is never a member:
// the owner keeps such ones in its own table.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>

namespace verbfault {

class DescriptorSet {
 public:
  static constexpr int kLimit = 4096;

  // Whether `fd` can be a member (0 <= fd < kLimit).
  static constexpr bool fits(int fd) { return fd >= 0 && fd < kLimit; }

  void insert(int fd) { word(fd).fetch_or(bit(fd), std::memory_order_release); }
  void erase(int fd) { word(fd).fetch_and(~bit(fd), std::memory_order_release); }
  bool contains(int fd) const {
    return fits(fd) && (word(fd).load(std::memory_order_acquire) & bit(fd)) != 0;
  }

 private:
  static std::uint64_t bit(int fd) { return std::uint64_t{1} << (fd % 64); }
  std::atomic<std::uint64_t>& word(int fd) { return words_[static_cast<std::size_t>(fd / 64)]; }
  const std::atomic<std::uint64_t>& word(int fd) const {
    return words_[static_cast<std::size_t>(fd / 64)];
  }

  std::array<std::atomic<std::uint64_t>, kLimit / 64> words_{};
};

}  // namespace verbfault
