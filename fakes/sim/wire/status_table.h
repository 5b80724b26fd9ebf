// The fabric's status table: a file in /dev/shm that every member maps
// (MAP_SHARED), with one slot per member index saying what the others need
// to know without asking: who holds the index, whether it waits in the
// fabric, how many frames it sent to and handled from each member. From it,
// any member can tell whether the fabric is quiescent.
//
// Whose is a slot: member i's process writes slot i only, except at join,
// when it also clears the entries about i in the others' slots. Every field
// is a uint64 read and written through std::atomic_ref (lock-free, so it
// works between processes).
//
// Liveness: member i holds a write lock on byte i of the file, an open
// file description lock (fcntl(2) F_OFD_SETLK) taken right after binding
// its socket, and is live once its slot also says it listens. The kernel
// releases the lock with the last descriptor of that description, as it
// frees the socket's name: when the process ends, and before it is a
// zombie (unlike kill(pid, 0), which says yes to a zombie). F_OFD_GETLK on
// a range answers with one live member in it, so the live members are
// found in about two calls each.
//
// Counters and reused indexes: a frame counter is a (tag, count) pair in
// one uint64: the high 32 bits are the low 32 bits of the incarnation (the
// fabric-wide join number) of the member it counts frames to or from, the
// low 32 bits the count (mod 2^32; only equality is asked). A count for an
// earlier holder of the index carries its tag, which no longer matches the
// slot's incarnation: it is read as 0. So a member that joins an index
// starts clean even when a slow peer still counts a frame for the dead
// predecessor after the join cleared the entry.
#pragma once

#include "owned_fds.h"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <sys/types.h>

namespace verbfault::sim::wire {

class StatusTable {
 public:
  // Opens (creating when absent) the table of `fabric`; its descriptor is
  // listed in `fds`. nullptr with `error` set when it cannot, or the file
  // is not a table of this layout.
  static std::unique_ptr<StatusTable> open(std::string_view fabric, OwnedFds* fds,
                                           std::string& error);
  ~StatusTable();
  StatusTable(const StatusTable&) = delete;
  StatusTable& operator=(const StatusTable&) = delete;

  // Makes `index` this table's member: takes its lock (waiting up to a
  // second for a predecessor that is still exiting: it let go of the socket
  // but not yet of the lock, as the kernel closes descriptors one by one),
  // then resets the slot with a new incarnation. Call after binding the
  // index's socket and before listening on it, so that whoever connects
  // finds the slot filled. False with `error` when the lock stays taken.
  bool claim(uint32_t index, std::string& error);
  // Says the member listens now: only from then on is it live to the
  // others (a connect(2) before listen(2) is refused, unix(7), so a member
  // that looked live then would fail a send).
  void mark_listening();
  uint32_t index() const { return index_; }
  uint64_t incarnation() const { return incarnation_; }

  // What slot `index` says of its holder (0s when never claimed).
  struct Holder {
    pid_t pid;
    uint64_t incarnation;
  };
  Holder holder(uint32_t index) const;

  // Whether `index` is held by a live member (this one included).
  bool live(uint32_t index) const;
  // The live members, lowest index first (this one included).
  std::vector<uint32_t> live_members() const;
  // Whether a live member other than this one exists (allocates nothing:
  // asked on a poll path).
  bool another_live() const;

  // Counts one frame sent to / handled from `member`, whose incarnation is
  // `incarnation`. Thread-safe.
  void count_sent(uint32_t member, uint64_t incarnation);
  void count_handled(uint32_t member, uint64_t incarnation);

  void set_waiting(bool waiting);
  // Whether this member's waiting mark stands for application threads that
  // all wait outside the device, on sockets (the mark held as of its last
  // look at them): a peer that wrote to one of them before it waits asks
  // the member to look again before it takes the fabric for quiescent
  // (sim/fabric/fabric_wait.h). Set while waiting only.
  void set_outside(bool outside);
  bool outside(uint32_t index) const;
  // Whether the member has work to do once the fabric is quiescent that
  // goes before any member's virtual time (Endpoint::set_settling).
  void set_settling(bool settling);
  bool settling(uint32_t index) const;
  // The verbs calls of this member's application (count_call), and the sum
  // over the other live members: while it moves, some peer is in verbs.
  void count_call();
  uint64_t others_calls() const;
  // Members that ever joined the fabric (incarnations handed out).
  uint64_t joins() const;
  bool quiescent() const;

  // In a forked child, after its descriptors were closed (OwnedFds; the
  // parent's lock is on the open file description, which the parent still
  // has open, so the lock stays): unmaps the child's copy of the table.
  void abandon_after_fork();

  // The connection manager's listeners (sim/cm): what a loopback address
  // reaches is a listener of any member, the fabric being one host. An
  // entry is the manager's encoding, nonzero; up to kListenersPerMember
  // per member (add_listener is false beyond). others_listeners: those of
  // the live members other than this one, lowest index first.
  static constexpr std::size_t kListenersPerMember = 16;
  bool add_listener(uint64_t entry);
  void remove_listener(uint64_t entry);
  std::vector<std::pair<uint32_t, uint64_t>> others_listeners() const;

  // The size of the file, for tests.
  static std::size_t file_bytes();

 private:
  // Calls visit(member) for live members other than this one, in no
  // particular order, until it returns false.
  template <class Visit>
  void for_each_other_live(Visit visit) const;
  struct Layout;
  StatusTable(OwnedFd fd, Layout* table) : fd_(std::move(fd)), table_(table) {}
  // Whether the holder of the slot said it listens.
  bool ready(uint32_t index) const;
  // One consistent read of the slots of `members` (see quiescent()).
  std::vector<uint64_t> snapshot(const std::vector<uint32_t>& members) const;

  OwnedFd fd_;
  Layout* table_;
  uint32_t index_ = 0;
  uint64_t incarnation_ = 0;
};

}  // namespace verbfault::sim::wire
