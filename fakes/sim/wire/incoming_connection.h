// One member's stream of frames from another, the side that accepted: the
// hello, then frames, read in big chunks into a buffer of the connection's
// own (a frame's head may arrive in one read and its tail in a later one,
// with other connections served in between).
//
// Only the service thread uses it.
#pragma once

#include "frame_format.h"
#include "owned_fds.h"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>

namespace verbfault::sim::wire {

class IncomingConnection {
 public:
  // The usual buffer: a read takes what the socket holds, up to this.
  static constexpr std::size_t kBufferBytes = 256 * 1024;

  IncomingConnection(OwnedFd fd, uint64_t id) : fd_(std::move(fd)), id_(id) {}

  int fd() const { return fd_.get(); }
  // Tells this connection from an earlier one in an epoll event that was
  // already on its way when that one closed.
  uint64_t id() const { return id_; }

  enum class Status {
    kOpen,     // the socket has nothing more now
    kBudget,   // read `budget` bytes; there may be more
    kClosed,   // end of stream, or an error: the peer is gone
    kInvalid,  // not a member's hello, or a frame longer than kMaxFrameBytes
  };

  // Reads the rest of the hello, and not a byte more: the frames after it
  // stay in the socket until the connection is admitted. kOpen with
  // identified() false while part of it has still to come.
  Status read_hello();
  bool identified() const { return hello_bytes_ == sizeof hello_; }
  uint32_t member() const { return hello_.member; }
  uint64_t incarnation() const { return hello_.incarnation; }

  // Receives the frames: the service thread's handling of one.
  class Sink {
   public:
    virtual void frame(const IncomingConnection& from, std::span<const uint8_t> frame) = 0;

   protected:
    ~Sink() = default;
  };
  // Reads what the socket holds, up to about `budget` bytes, and hands each
  // complete frame to `sink`, in order. On kClosed, every complete frame
  // before the end has been handed over.
  Status read_frames(Sink& sink, std::size_t budget);

  // The owner's bookkeeping: whether the socket is in the epoll set.
  bool registered = false;

 private:
  // Makes room after end_ for the next read: moves a partial frame to the
  // front, or grows the buffer for a frame longer than it.
  void make_room();

  OwnedFd fd_;
  uint64_t id_;
  Hello hello_{};
  std::size_t hello_bytes_ = 0;
  std::unique_ptr<uint8_t[]> buffer_;
  std::size_t capacity_ = 0;
  std::size_t begin_ = 0;  // first byte not yet handed over
  std::size_t end_ = 0;    // one past the last byte read
};

}  // namespace verbfault::sim::wire
