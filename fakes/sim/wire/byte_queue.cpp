#include "byte_queue.h"

#include <algorithm>
#include <cstring>

namespace verbfault::sim::wire {

void ByteQueue::append(std::span<const uint8_t> bytes) {
  while (!bytes.empty()) {
    if (blocks_.empty() || tail_ == kBlockBytes) {
      if (!spare_.empty()) {
        blocks_.push_back(std::move(spare_.back()));
        spare_.pop_back();
      } else {
        // Not value-initialized: the bytes are written before they are read.
        blocks_.push_back(std::unique_ptr<Block>(new Block));
      }
      tail_ = 0;
    }
    const std::size_t take = std::min(bytes.size(), kBlockBytes - tail_);
    std::memcpy(blocks_.back()->bytes + tail_, bytes.data(), take);
    tail_ += take;
    size_ += take;
    bytes = bytes.subspan(take);
  }
}

int ByteQueue::gather(iovec* iov, int max) const {
  int filled = 0;
  for (std::size_t i = 0; i < blocks_.size() && filled < max; ++i) {
    const std::size_t begin = i == 0 ? head_ : 0;
    const std::size_t end = i + 1 == blocks_.size() ? tail_ : kBlockBytes;
    if (end == begin) continue;
    iov[filled].iov_base = blocks_[i]->bytes + begin;
    iov[filled].iov_len = end - begin;
    ++filled;
  }
  return filled;
}

void ByteQueue::consume(std::size_t bytes) {
  bytes = std::min(bytes, size_);
  size_ -= bytes;
  while (bytes > 0 || (!blocks_.empty() && size_ == 0)) {
    const bool last = blocks_.size() == 1;
    const std::size_t end = last ? tail_ : kBlockBytes;
    const std::size_t take = std::min(bytes, end - head_);
    head_ += take;
    bytes -= take;
    if (head_ < end) break;
    // The front block is used up (or the queue is empty): keep it for reuse.
    if (spare_.size() < kSpareBlocks) spare_.push_back(std::move(blocks_.front()));
    blocks_.pop_front();
    head_ = 0;
    if (last) tail_ = 0;
  }
}

}  // namespace verbfault::sim::wire
