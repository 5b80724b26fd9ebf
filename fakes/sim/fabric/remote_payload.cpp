// remote_payload.h: describing a request's payload by reference, and
// resolving such a description at the target.
#include "remote_payload.h"

#include <pthread.h>

#include <atomic>

#include "shared_memory.h"

#include <unistd.h>

#include <cstring>
#include <new>

namespace verbfault::sim::remote_payload {

namespace {

// Members a target of which could not map our references: bit per member
// index (wire::kMaxMembers == 64). Guarded by Fabric::mutex.
uint64_t g_not_described_to = 0;
// Numbers the requests decoded, for the mapping cache's eviction.
// Guarded by Fabric::mutex.
uint64_t g_requests = 0;

template <class T>
Bytes bytes_of(const T& value) {
  return {reinterpret_cast<const uint8_t*>(&value), sizeof value};
}

// The process's pid, read once (getpid(2) is a system call per request
// otherwise) and again in a child made by fork(2): a child describes its
// own memory (it has no segments, shared_memory.h, but the pid must be
// its own).
std::atomic<pid_t> g_pid{0};

pid_t own_pid() {
  pid_t pid = g_pid.load(std::memory_order_relaxed);
  if (pid == 0) {
    static const bool registered = [] {
      pthread_atfork(nullptr, nullptr, [] { g_pid.store(getpid(), std::memory_order_relaxed); });
      return true;
    }();
    (void)registered;
    pid = getpid();
    g_pid.store(pid, std::memory_order_relaxed);
  }
  return pid;
}

}  // namespace

bool Outgoing::describe(ibv_qp_type type, uint32_t member, std::span<const Source> payload) {
  if (type != IBV_QPT_RC || member >= 64 || (g_not_described_to >> member) & 1) return false;
  if (shared_memory::segment_count() == 0 || length_of(payload) < kMinDescribedBytes) return false;
  ::new (static_cast<void*>(&s_)) Storage;
  std::size_t n = 0;
  s_.in_frame = 0;
  bool referenced = false;
  for (const Source& piece : payload) {
    const uint8_t* data = piece.data();
    uint64_t left = piece.size();
    while (left != 0) {
      if (n == kMaxEntries) return false;  // too fragmented: the bytes go
      uint64_t gap = 0;
      const std::optional<shared_memory::Location> at = shared_memory::locate(data, left, gap);
      PieceEntry& entry = s_.entries[n++];
      if (at) {
        entry = PieceEntry{at->length, at->segment, at->offset, at->fd, 0};
        referenced = true;
      } else {
        entry = PieceEntry{gap, 0, 0, -1, 0};
        s_.parts[3 + s_.in_frame++] = Bytes(data, gap);
      }
      data += entry.length;
      left -= entry.length;
    }
  }
  if (!referenced) return false;
  s_.described.pid = own_pid();
  s_.described.pieces = static_cast<uint32_t>(n);
  return true;
}

std::span<const Bytes> Outgoing::parts(Bytes header) {
  s_.parts[0] = header;
  s_.parts[1] = bytes_of(s_.described);
  s_.parts[2] =
      Bytes(reinterpret_cast<const uint8_t*>(s_.entries), s_.described.pieces * sizeof(PieceEntry));
  return std::span(s_.parts, 3 + s_.in_frame);
}

bool fits(const RequestFrame& frame, std::size_t rest) {
  if (frame.payload_format == PayloadFormat::kBytes) return rest == frame.length;
  return frame.payload_format == PayloadFormat::kDescribed && rest >= sizeof(DescribedPayload);
}

Incoming::Status Incoming::decode(uint32_t from, const RequestFrame& frame, Bytes rest) {
  if (frame.payload_format == PayloadFormat::kBytes) {
    if (rest.size() != frame.length) return Status::kMalformed;
    pieces_.push_back(rest);
    return Status::kOk;
  }
  if (frame.payload_format != PayloadFormat::kDescribed || rest.size() < sizeof(DescribedPayload))
    return Status::kMalformed;
  DescribedPayload described;
  std::memcpy(&described, rest.data(), sizeof described);
  rest = rest.subspan(sizeof described);
  if (described.pieces > Outgoing::kMaxEntries ||
      rest.size() < described.pieces * sizeof(PieceEntry))
    return Status::kMalformed;
  Bytes in_frame = rest.subspan(described.pieces * sizeof(PieceEntry));
  auto entry_at = [&](uint32_t i) {
    PieceEntry entry;
    std::memcpy(&entry, rest.data() + i * sizeof entry, sizeof entry);
    return entry;
  };
  // The lengths add up (to the request's, and the bytes in the frame to
  // what follows the entries) before anything is mapped.
  uint64_t total = 0;
  uint64_t framed = 0;
  for (uint32_t i = 0; i < described.pieces; ++i) {
    const PieceEntry entry = entry_at(i);
    if (entry.length > frame.length - total) return Status::kMalformed;
    total += entry.length;
    if (entry.segment == 0) framed += entry.length;
  }
  if (total != frame.length || framed != in_frame.size()) return Status::kMalformed;
  const uint64_t request = ++g_requests;
  for (uint32_t i = 0; i < described.pieces; ++i) {
    const PieceEntry entry = entry_at(i);
    if (entry.segment == 0) {
      pieces_.push_back(in_frame.first(entry.length));
      in_frame = in_frame.subspan(entry.length);
      continue;
    }
    const Source mapped = shared_memory::resolve(from, described.pid, entry.fd, entry.segment,
                                                 entry.offset, entry.length, request);
    if (mapped.size() != entry.length) return Status::kUnresolved;
    pieces_.push_back(mapped);
  }
  return Status::kOk;
}

void stop_describing_to(uint32_t member) {
  if (member < 64) g_not_described_to |= uint64_t{1} << member;
}

void forget(uint32_t member) {
  if (member < 64) g_not_described_to &= ~(uint64_t{1} << member);
  shared_memory::forget(member);
}

}  // namespace verbfault::sim::remote_payload
