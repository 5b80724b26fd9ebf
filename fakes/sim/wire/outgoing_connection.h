// One member's stream of frames to another, the side that connected: frames
// leave in call order, written from the caller's thread while the socket
// takes them and queued for the service thread when it does not. The
// socket is non-blocking, so no call here ever waits for the peer to read.
//
// Not thread-safe by itself: its owner holds one mutex around every call
// and every use of write_armed and watched (LocalEndpoint's Peer::mutex).
#pragma once

#include "byte_queue.h"
#include "frame_format.h"
#include "owned_fds.h"
#include "real_clock.h"

#include <chrono>
#include <cstdint>
#include <span>

namespace verbfault::sim::wire {

class OutgoingConnection {
 public:
  // `fd` is connected; `hello` goes out before the first frame.
  OutgoingConnection(OwnedFd fd, uint64_t id, uint64_t peer_incarnation, const Hello& hello);

  int fd() const { return fd_.get(); }
  // Tells this connection from an earlier one to the same member in an
  // epoll event that was already on its way when that one closed.
  uint64_t id() const { return id_; }
  // The join number of the member at the other end.
  uint64_t peer_incarnation() const { return peer_incarnation_; }

  // Writes the frame made of `parts` (`length` bytes in all) after whatever
  // is queued, and queues the part the socket does not take. False, with
  // nothing queued, when the connection is broken (the peer closed it).
  bool send(std::span<const std::span<const uint8_t>> parts, uint64_t length);
  // Writes queued bytes while the socket takes them. False when broken.
  bool flush();
  // Writes queued bytes, waiting (poll(2)) for the socket to take them,
  // until none is left, the connection breaks, or `deadline` passes. True
  // when none is left.
  bool drain(RealClock::time_point deadline);
  // Queues a frame without writing anything (flush() writes it): false
  // when the connection is broken.
  bool enqueue(std::span<const std::span<const uint8_t>> parts, uint64_t length);

  bool has_queued() const { return !queue_.empty(); }
  bool broken() const { return broken_; }
  void mark_broken() { broken_ = true; }

  // Whether EPOLLOUT is in the socket's epoll interest: only while bytes
  // are queued, so the service thread is not woken by every byte the peer
  // reads (epoll is level-triggered here).
  bool write_armed = false;
  // Whether the socket is in the epoll set at all: taken out at the
  // hangup, so a level-triggered EPOLLHUP does not wake the thread again.
  bool watched = false;

 private:
  // sendmsg(2) of `iov` without waiting and without SIGPIPE: bytes written,
  // 0 when the socket is full, -1 when broken.
  long write(const iovec* iov, int count);

  OwnedFd fd_;
  uint64_t id_;
  uint64_t peer_incarnation_;
  ByteQueue queue_;
  bool broken_ = false;
};

}  // namespace verbfault::sim::wire
