// One process's end of the local fabric's wire: how the simulated devices
// of different processes on one host reach each other
// (docs/local-fabric.md, "The local fabric").
//
// A fabric is a name (VERBFAULT_FABRIC). A process joins it as a member: a
// small index, unique among the live members, owned by binding the
// abstract UNIX socket "\0verbfault/<fabric>/<index>" (Linux abstract
// namespace: the name is released by the kernel when the process is gone,
// however it ends, so there is nothing to clean up and a crashed member's
// index is free again). Members exchange frames: opaque byte strings, in
// FIFO order per (sender, receiver) pair, over one SOCK_STREAM connection
// per ordered pair (the sender connects). The wire does not know what a
// frame means; the device model (fakes/sim/remote_*.cpp) does.
//
// Beside the sockets, a shared status table (a file in /dev/shm named
// after the fabric) holds per member what the others need to know without
// asking: its pid, whether it is waiting in the fabric (an empty poll or a
// blocking event wait), and how many frames it has sent to and received
// from the wire. All members waiting and every sent frame received means
// the fabric is quiescent: nothing can happen until some member is called
// again.
//
// On the wire (one host, so host byte order): a connection starts with a
// hello from the connecting side (frame_format.h: a magic word, its member
// index and its incarnation, the join number that tells a member from an
// earlier holder of the same index); then each frame is a uint64 length
// followed by that many bytes.
#pragma once

#include <cstddef>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace verbfault::sim::wire {

// The most members a fabric has (indexes 0 .. kMaxMembers - 1).
inline constexpr uint32_t kMaxMembers = 64;
// The longest frame send() takes (a receiver grows its buffer to the
// frame's length, so a bound keeps a corrupt length from asking for more).
inline constexpr uint64_t kMaxFrameBytes = uint64_t{1} << 31;

class Endpoint {
 public:
  // Called on the service thread for every frame received, in the order
  // the sender sent them. The span is valid during the call only.
  using FrameHandler = std::function<void(uint32_t from_member, std::span<const uint8_t> frame)>;
  // Called on the service thread once per member whose connection to us
  // or from us closed (the process exited or crashed), after the last
  // frame from it was handled.
  using PeerGoneHandler = std::function<void(uint32_t member)>;

  // Joins `fabric` as member `requested`, or as the lowest free index when
  // nullopt. nullptr with `error` set to one line naming the fabric and
  // what went wrong (index taken, name too long, socket error).
  static std::unique_ptr<Endpoint> join(std::string_view fabric, std::optional<uint32_t> requested,
                                        std::string& error);
  // Stops the service thread (waking it, then joining it) and closes the
  // sockets: the other members see this one gone. No other call may be
  // running. Leaking the endpoint at exit instead is safe too: the wire
  // keeps no state outside it, so its thread touches nothing that static
  // destructors end.
  virtual ~Endpoint() = default;

  // In a child made by fork(2) from a process with an endpoint: closes the
  // child's copies of the endpoint's descriptors (the parent's sockets and
  // epoll set stay as they are: only the last descriptor of a socket closes
  // it, epoll(7)) and releases `endpoint` without destroying it: the
  // service thread is the parent's (fork copies only the calling thread),
  // and the object's containers may have been half-changed by another of
  // the parent's threads at fork() time, so the child leaks its copy. The
  // child may then join the fabric afresh. Does nothing for nullptr.
  static void abandon_after_fork(std::unique_ptr<Endpoint>& endpoint);

  virtual uint32_t member() const = 0;
  virtual const std::string& fabric() const = 0;

  // Starts the service thread (once). Handlers run on it, one at a time,
  // until the endpoint is destroyed: what they use must outlive it. They
  // must not throw, nor destroy the endpoint.
  virtual void start(FrameHandler on_frame, PeerGoneHandler on_peer_gone) = 0;

  // Queues a frame (the concatenation of `parts`) for `member`. Never
  // blocks on the peer: a frame the socket does not take at once is kept
  // and written by the service thread when the socket drains, so a caller
  // holding a lock the service thread's handlers take cannot deadlock
  // with a peer doing the same. Frames to one member leave in call order.
  // False (nothing queued) when no live member has that index, its
  // connection is gone (until the PeerGoneHandler for it has run; a later
  // send connects to whoever holds the index then), or the frame is longer
  // than kMaxFrameBytes. Thread-safe; may be called from the handlers.
  virtual bool send(uint32_t member, std::span<const std::span<const uint8_t>> parts) = 0;
  // As send(), for a frame the member's service thread answers with a
  // frame of its own as soon as it has handled it, whatever its
  // application does (an RDMA WRITE, READ or atomic the responder never
  // holds). While such an answer is owed, later small requests to that
  // member wait in this process's queue instead of costing a write each,
  // and leave together, in order, when the next frame from that member has
  // been handled, when this member waits in the fabric (set_waiting(true)),
  // before a frame that is not deferred (an answer, or a larger frame), or
  // at drain(): the owed answer is what bounds
  // their wait, as a requester's ACK clock does. Thread-safe.
  virtual bool send_expecting_answer(uint32_t member,
                                     std::span<const std::span<const uint8_t>> parts) = 0;
  // Writes what is still queued for every member, waiting for their
  // sockets to take it, for at most `limit` in all. For the end of the
  // process: frames queued by send() (answers above all) are otherwise
  // lost with it, although what they answer may already have been seen by
  // the application, which on hardware means they had left the NIC.
  // Thread-safe.
  virtual void drain(std::chrono::milliseconds limit) = 0;

  // Whether a member with that index is live (bound) now. A member holds,
  // besides its socket, a lock on its own byte of the status table file
  // (fcntl(2) F_OFD_SETLK); the kernel drops both when the process ends,
  // before it is a zombie (kill(pid, 0) would still say yes then), so the
  // lock tells whether the index is held with one fcntl(2) F_OFD_GETLK.
  // A member that ended counts as live until its departure has been
  // handled here (the PeerGoneHandler returned): the kernel drops its lock
  // at once, while its last frames may still wait unread in our socket (an
  // ACK a process sent just before it exited: a waiter that took it as gone
  // judged the fabric idle, and its peer's last completion came too late).
  // So do others_live() and quiescent().
  virtual bool alive(uint32_t member) = 0;

  // The status table. set_waiting(true) before sleeping in the fabric,
  // false after. quiescent(): every live member is waiting and every frame
  // sent on the wire to a live member has been handled by it (frames to or
  // from a member that is gone do not count; a reused index starts clean).
  // A frame counts as sent once send() took it, as handled once the
  // FrameHandler returned: a handler that gives this process's waiting
  // thread something to do should set_waiting(false) before it returns.
  // The table is read twice and must not change in between, so the answer
  // held at one instant. Cheap enough to call every few hundred
  // microseconds while waiting.
  virtual void set_waiting(bool waiting) = 0;
  // Whether a member's waiting mark stands for application threads that all
  // wait outside the device, on sockets (StatusTable::set_outside).
  virtual void set_outside(bool outside) = 0;
  virtual bool outside(uint32_t member) = 0;
  // Whether `member` holds requests it answers at quiescence
  // (set_settling).
  virtual bool settling(uint32_t member) = 0;
  virtual bool quiescent() = 0;
  // Live members now, lowest index first (this one included).
  virtual std::vector<uint32_t> members() = 0;
  // Whether another live member exists (allocates nothing).
  virtual bool others_live() = 0;
  // Counts a verbs call of this member's application; the sum of the
  // other live members' counts (it moves while one of them is in verbs).
  virtual void count_call() = 0;
  virtual uint64_t others_calls() = 0;
  // How many members ever joined the fabric (a member that joined and
  // ended counts; a reused index counts again).
  virtual uint64_t joins() = 0;
  // The device model's order of work at quiescence: a member that holds
  // requests it will answer once nothing else can happen says so, and the
  // others let it go first (another_settling() is true for them) before
  // they move their virtual clocks.
  virtual void set_settling(bool settling) = 0;
  virtual bool another_settling() = 0;
  // The connection manager's listeners in the status table
  // (StatusTable::add_listener).
  virtual bool add_listener(uint64_t entry) = 0;
  virtual void remove_listener(uint64_t entry) = 0;
  virtual std::vector<std::pair<uint32_t, uint64_t>> others_listeners() = 0;
};

}  // namespace verbfault::sim::wire
