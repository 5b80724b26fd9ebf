#include "outgoing_connection.h"

#include <poll.h>
#include <sys/socket.h>

#include <climits>
#include <cerrno>
#include <vector>

namespace verbfault::sim::wire {

namespace {

// iovec entries on the stack; a frame of more parts (rare) takes a vector.
constexpr int kInlineParts = 15;
// Queue blocks per flush: 16 MiB per sendmsg(2), far more than a socket
// buffer holds.
constexpr int kFlushBlocks = 64;

}  // namespace

OutgoingConnection::OutgoingConnection(OwnedFd fd, uint64_t id, uint64_t peer_incarnation,
                                       const Hello& hello)
    : fd_(std::move(fd)), id_(id), peer_incarnation_(peer_incarnation) {
  queue_.append({reinterpret_cast<const uint8_t*>(&hello), sizeof hello});
}

long OutgoingConnection::write(const iovec* iov, int count) {
  msghdr message{};
  message.msg_iov = const_cast<iovec*>(iov);
  message.msg_iovlen = static_cast<std::size_t>(count);
  for (;;) {
    // MSG_NOSIGNAL: a peer that is gone gives EPIPE, not a SIGPIPE that
    // would kill the program (send(2)); MSG_DONTWAIT: the socket is
    // non-blocking anyway, this only says so here.
    const ssize_t written = sendmsg(fd_.get(), &message, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (written >= 0) return written;
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) return 0;
    broken_ = true;  // EPIPE, ECONNRESET: the peer closed its end
    return -1;
  }
}

bool OutgoingConnection::flush() {
  while (!broken_ && !queue_.empty()) {
    iovec iov[kFlushBlocks];
    const int count = queue_.gather(iov, kFlushBlocks);
    std::size_t gathered = 0;
    for (int i = 0; i < count; ++i) gathered += iov[i].iov_len;
    const long written = write(iov, count);
    if (written < 0) return false;
    queue_.consume(static_cast<std::size_t>(written));
    if (static_cast<std::size_t>(written) < gathered) break;  // the socket is full
  }
  return !broken_;
}

bool OutgoingConnection::drain(RealClock::time_point deadline) {
  while (flush() && !queue_.empty()) {
    const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - RealClock::now());
    if (left.count() <= 0) return false;
    pollfd writable{fd_.get(), POLLOUT, 0};
    if (poll(&writable, 1, static_cast<int>(left.count())) < 0 && errno != EINTR) return false;
  }
  return queue_.empty();
}

bool OutgoingConnection::enqueue(std::span<const std::span<const uint8_t>> parts, uint64_t length) {
  if (broken_) return false;
  const FrameLength header = length;
  queue_.append({reinterpret_cast<const uint8_t*>(&header), sizeof header});
  for (const auto& part : parts) queue_.append(part);
  return true;
}

bool OutgoingConnection::send(std::span<const std::span<const uint8_t>> parts, uint64_t length) {
  if (broken_) return false;
  // Bytes already queued go first: a frame written now would overtake them.
  if (!queue_.empty() && !flush()) return false;
  const FrameLength header = length;
  const std::span<const uint8_t> header_bytes(reinterpret_cast<const uint8_t*>(&header),
                                              sizeof header);
  // More parts than one sendmsg(2) takes (IOV_MAX): through the queue.
  if (!queue_.empty() || parts.size() + 1 > IOV_MAX) {
    const bool was_empty = queue_.empty();
    queue_.append(header_bytes);
    for (const auto& part : parts) queue_.append(part);
    // Still full: the service thread writes it on EPOLLOUT.
    return was_empty ? flush() : true;
  }

  // The fast path: the whole frame in one sendmsg(2), straight from the
  // caller's buffers.
  iovec inline_iov[kInlineParts + 1];
  std::vector<iovec> many;
  iovec* iov = inline_iov;
  if (parts.size() > kInlineParts) {
    many.resize(parts.size() + 1);
    iov = many.data();
  }
  int count = 0;
  iov[count++] = {const_cast<FrameLength*>(&header), sizeof header};
  for (const auto& part : parts) {
    if (!part.empty()) iov[count++] = {const_cast<uint8_t*>(part.data()), part.size()};
  }
  const long written = write(iov, count);
  if (written < 0) return false;

  // The socket took `written` bytes: queue the rest of the frame.
  auto skip = static_cast<std::size_t>(written);
  for (int i = 0; i < count; ++i) {
    const auto* bytes = static_cast<const uint8_t*>(iov[i].iov_base);
    if (skip >= iov[i].iov_len) {
      skip -= iov[i].iov_len;
      continue;
    }
    queue_.append({bytes + skip, iov[i].iov_len - skip});
    skip = 0;
  }
  return true;
}

}  // namespace verbfault::sim::wire
