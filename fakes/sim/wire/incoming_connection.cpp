#include "incoming_connection.h"

#include "endpoint.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace verbfault::sim::wire {

namespace {

// Less room than this after the data, and the partial frame moves to the
// front first: a read is a syscall, it should bring much.
constexpr std::size_t kMinReadBytes = 64 * 1024;

std::unique_ptr<uint8_t[]> allocate(std::size_t bytes) {
  return std::unique_ptr<uint8_t[]>(new uint8_t[bytes]);  // not zeroed: read into first
}

}  // namespace

IncomingConnection::Status IncomingConnection::read_hello() {
  while (hello_bytes_ < sizeof hello_) {
    const ssize_t got = read(fd_.get(), reinterpret_cast<uint8_t*>(&hello_) + hello_bytes_,
                             sizeof hello_ - hello_bytes_);
    if (got > 0) {
      hello_bytes_ += static_cast<std::size_t>(got);
      continue;
    }
    if (got < 0 && errno == EINTR) continue;
    if (got < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return Status::kOpen;
    return Status::kClosed;
  }
  if (hello_.magic != Hello::kMagic || hello_.member >= kMaxMembers) return Status::kInvalid;
  return Status::kOpen;
}

void IncomingConnection::make_room() {
  if (!buffer_) {
    buffer_ = allocate(kBufferBytes);
    capacity_ = kBufferBytes;
  }
  if (begin_ == end_) {
    begin_ = end_ = 0;
    if (capacity_ > kBufferBytes) {  // back from a long frame to the usual size
      buffer_ = allocate(kBufferBytes);
      capacity_ = kBufferBytes;
    }
    return;
  }
  // A partial frame is at [begin_, end_): how far it reaches once complete.
  std::size_t needed = kFrameHeaderBytes;
  if (end_ - begin_ >= kFrameHeaderBytes) {
    FrameLength length;
    std::memcpy(&length, buffer_.get() + begin_, sizeof length);
    needed += length;  // at most kMaxFrameBytes: read_frames checked
  }
  if (needed > capacity_) {
    // Longer than the buffer: one of its own, for this frame only.
    auto grown = allocate(needed);
    std::memcpy(grown.get(), buffer_.get() + begin_, end_ - begin_);
    buffer_ = std::move(grown);
    capacity_ = needed;
  } else if (begin_ > 0 && (begin_ + needed > capacity_ || capacity_ - end_ < kMinReadBytes)) {
    std::memmove(buffer_.get(), buffer_.get() + begin_, end_ - begin_);
  } else {
    return;
  }
  end_ -= begin_;
  begin_ = 0;
}

IncomingConnection::Status IncomingConnection::read_frames(Sink& sink, std::size_t budget) {
  std::size_t total = 0;
  while (total < budget) {
    make_room();
    const std::size_t room = capacity_ - end_;
    const ssize_t got = read(fd_.get(), buffer_.get() + end_, room);
    if (got == 0) return Status::kClosed;
    if (got < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) return Status::kOpen;
      return Status::kClosed;  // ECONNRESET: the peer is gone all the same
    }
    end_ += static_cast<std::size_t>(got);
    total += static_cast<std::size_t>(got);
    while (end_ - begin_ >= kFrameHeaderBytes) {
      FrameLength length;
      std::memcpy(&length, buffer_.get() + begin_, sizeof length);
      if (length > kMaxFrameBytes) return Status::kInvalid;
      if (end_ - begin_ - kFrameHeaderBytes < length) break;
      const std::size_t at = begin_ + kFrameHeaderBytes;
      begin_ = at + length;
      sink.frame(*this, {buffer_.get() + at, static_cast<std::size_t>(length)});
    }
    // A read of a UNIX stream socket takes all it holds, up to `room`
    // (Linux, unix_stream_read_generic): less means it is empty now, and
    // asking again would only say so. Level-triggered epoll reports more.
    if (static_cast<std::size_t>(got) < room) return Status::kOpen;
  }
  return Status::kBudget;
}

}  // namespace verbfault::sim::wire
