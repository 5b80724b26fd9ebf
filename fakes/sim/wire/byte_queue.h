// Bytes waiting to be written to a socket, in fixed-size blocks: appending
// copies once, writing gathers the blocks into an iovec array (no copy to
// make them contiguous), and emptied blocks are kept for reuse, so a
// connection that queues steadily does not allocate per frame.
#pragma once

#include <sys/uio.h>

#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <span>
#include <vector>

namespace verbfault::sim::wire {

class ByteQueue {
 public:
  static constexpr std::size_t kBlockBytes = 256 * 1024;
  // Blocks kept after they empty (1 MiB); a longer backlog's are freed.
  static constexpr std::size_t kSpareBlocks = 4;

  bool empty() const { return size_ == 0; }
  std::size_t size() const { return size_; }

  void append(std::span<const uint8_t> bytes);
  // Fills up to `max` entries of `iov` with the bytes at the front, in
  // order; returns how many entries were filled.
  int gather(iovec* iov, int max) const;
  // Drops `bytes` from the front (at most size()).
  void consume(std::size_t bytes);

 private:
  struct Block {
    uint8_t bytes[kBlockBytes];
  };
  std::deque<std::unique_ptr<Block>> blocks_;
  std::vector<std::unique_ptr<Block>> spare_;
  std::size_t head_ = 0;  // offset of the first byte in blocks_.front()
  std::size_t tail_ = 0;  // bytes used in blocks_.back()
  std::size_t size_ = 0;
};

}  // namespace verbfault::sim::wire
