// Registered memory another process of the local fabric can read in
// place: the single-copy data path of RDMA WRITE and SEND between
// processes (docs/local-fabric.md, "The local fabric", "Payload by
// reference").
//
// Over a socket a payload is copied twice (into the kernel, out of it
// into the target's buffer) plus once more into the target memory. A
// real HCA reads the requester's memory by DMA while the responder's
// side writes the target: one pass over the bytes. To get the same here,
// the whole pages of a registered region are moved onto a memfd
// (memfd_create(2)), mapped MAP_SHARED at the same addresses, and a peer
// maps that memfd (through /proc/<pid>/fd/<fd>, proc(5): same user) to
// copy straight from it into its target memory.
//
// The rule for which pages are shared, and why:
// - Only pages entirely inside the region: a partial first or last page
//   holds other objects (malloc puts neighbours there) whose mapping must
//   not change; bytes there go in the frame, as everything did before.
// - Only private anonymous read/write memory (the heap and anonymous
//   mmaps, checked in /proc/self/maps): remapping a file mapping, a shared
//   mapping, the stack or huge pages would change what they are.
// - At least kMinSharedBytes of whole pages, and at most kMaxSegments
//   segments at a time (each holds a descriptor).
// - A range already inside a segment (the same buffer registered again)
//   shares that segment; one that partly overlaps one is not shared.
// The move copies the pages and then replaces the mapping in one
// mremap(2) (no instant where the addresses are unmapped). A write by
// another thread of the program into those very pages between the copy
// and the replacement is lost: registering memory that another thread is
// writing at that moment is the one thing the simulation does not
// reproduce (ibv_reg_mr(3) pins pages, it does not move them). When the
// last region on a segment goes, the pages are moved back to private
// anonymous memory the same way (if the program has not unmapped them
// already), so that fork(2) and madvise(2) behave as before; a peer's
// mapping of the memfd keeps the file alive and readable, never crashes,
// but no longer sees this process's memory. In a child made by fork(2)
// every segment is moved back to private memory (as the kernel gives a
// child copies of pinned pages), so the child's regions use frames.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <sys/types.h>

namespace verbfault::sim::shared_memory {

inline constexpr std::size_t kMinSharedBytes = 16 * 1024;
inline constexpr std::size_t kMaxSegments = 256;

// Where a range of this process's memory lies in a segment: enough for a
// peer to map it (the owner's pid and descriptor) and to check that the
// descriptor still is that segment (the id, in the memfd's name).
struct Location {
  int fd = -1;
  uint64_t segment = 0;  // unique in this process, never reused
  uint64_t offset = 0;   // in the segment
  uint64_t length = 0;   // of the range found (a prefix of the one asked for)
};

// This process's side. Registration and release run under Fabric::mutex
// (ibv_reg_mr, ibv_dereg_mr, ibv_rereg_mr, closing a context); lookups
// from the requester under it too. The segments' own mutex is there for
// fork(2) only: the atfork handlers hold it across the fork so that the
// child sees the table whole.

// Registers those atfork handlers (once). The Fabric calls it when it is
// made, before any share() and before it registers its own: prepare
// handlers run in the reverse order of registration (pthread_atfork(3)),
// so fork(2) then takes Fabric::mutex before the segments' mutex, the
// order registration takes them in.
void install_fork_handlers();

// Backs the whole pages of [addr, addr + length) with a memfd when the
// rule above allows: the segment's id (to give to release()), or 0 when
// the memory stays as it is.
uint64_t share(void* addr, std::size_t length);
// A region that used segment `id` (0: none) is gone.
void release(uint64_t id);

// The first part of [data, data + length) that lies in a segment, when it
// starts at `data`: its location. nullopt when byte `data` is in none;
// `gap` then says how many bytes from `data` on are in none (up to
// `length`).
std::optional<Location> locate(const uint8_t* data, uint64_t length, uint64_t& gap);

// The peer's side: mappings of other members' segments, made on first use
// and cached. Run on the service thread under Fabric::mutex (which guards
// the cache): the frames that use them are handled there, and a member
// that is gone is forgotten there (remote::on_peer_gone).

// [offset, offset + length) of segment `segment` of member `member`,
// whose process `pid` holds it as descriptor `fd`, mapped into this
// process; empty when it cannot be mapped (the segment was released, the
// process is gone, the range is outside the file). Valid until forget()
// for the member or the next request's resolve (the cache is bounded:
// `request` numbers the request, and only mappings not used by the
// current one are evicted).
std::span<const uint8_t> resolve(uint32_t member, pid_t pid, int fd, uint64_t segment,
                                 uint64_t offset, uint64_t length, uint64_t request);
// Unmaps every mapping of `member`'s segments.
void forget(uint32_t member);
// How many segments of other members are mapped now (tests).
std::size_t mapped_count();
// How many segments of this process exist now (tests).
std::size_t segment_count();

}  // namespace verbfault::sim::shared_memory
