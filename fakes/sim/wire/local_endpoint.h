// The Endpoint of this process: its bound socket, a connection to each
// member it sends to, one from each member that sends to it, the status
// table, and the service thread that reads frames and writes what the
// sockets did not take at once.
//
// Incarnations. An index may change hands: a member dies and another
// process joins with its index. Every connection is tied to one holder,
// its incarnation (the join number from the status table): the hello says
// the connecting side's, and the connecting side reads the listener's from
// the table (checked against the listener's pid, SO_PEERCRED in unix(7)).
// Per index, the endpoint talks to one incarnation at a time; a connection
// from a newer one waits (parked, out of the epoll set, its bytes left in
// the socket) until the older one's last frame was handled and the
// PeerGoneHandler ran for it; one from an older one (a connection made
// just before its process died, found in the listen backlog late) is
// closed unread.
//
// Gone. A member's process closes its connections when it ends. Whichever
// end of stream the service thread sees first, the PeerGoneHandler runs
// after the incoming connection's last frame: on the incoming connection's
// end of stream, or, when the member never sent us anything, on the
// outgoing connection's hangup (after accepting whatever waits in the
// listen backlog, which may hold that member's connection still).
//
// Locks. Peer::mutex guards a peer's `incarnation` and `out` (the outgoing
// connection and its queue); senders and the service thread take it, never
// while calling a handler and never two at once. Everything else (incoming
// connections, parked ones, the handlers) is the service thread's alone;
// the status table is atomics.
#pragma once

#include "endpoint.h"
#include "incoming_connection.h"
#include "outgoing_connection.h"
#include "owned_fds.h"
#include "status_table.h"

#include <pthread.h>

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

namespace verbfault::sim::wire {

class LocalEndpoint final : public Endpoint, private IncomingConnection::Sink {
 public:
  explicit LocalEndpoint(std::string fabric) : fabric_(std::move(fabric)) {}
  ~LocalEndpoint() override;

  // Binds an index (`requested`, or the lowest free one), claims its slot
  // of the status table, listens. False with `error` set when it cannot.
  bool open(std::optional<uint32_t> requested, std::string& error);
  // In a forked child: see Endpoint::abandon_after_fork.
  void abandon_in_child();

  uint32_t member() const override { return member_; }
  const std::string& fabric() const override { return fabric_; }
  void start(FrameHandler on_frame, PeerGoneHandler on_peer_gone) override;
  bool send(uint32_t member, std::span<const std::span<const uint8_t>> parts) override {
    return send_frame(member, parts, false);
  }
  bool send_expecting_answer(uint32_t member,
                             std::span<const std::span<const uint8_t>> parts) override {
    return send_frame(member, parts, true);
  }
  void drain(std::chrono::milliseconds limit) override;
  // A member whose process ended still counts until its departure has been
  // handled here (departing()): its last frames may wait unread in our
  // socket, and the kernel drops its table lock before we read them.
  bool alive(uint32_t member) override {
    return table_->live(member) || (member < kMaxMembers && (departing() >> member & 1) != 0);
  }
  void set_waiting(bool waiting) override {
    // A member that waits holds back nothing: it would wait for itself
    // (quiescence counts a deferred frame as sent, not handled).
    if (waiting && deferred_to_.load(std::memory_order_relaxed) != 0) flush_deferred();
    table_->set_waiting(waiting);
  }
  void set_outside(bool outside) override { table_->set_outside(outside); }
  bool outside(uint32_t member) override { return table_->outside(member); }
  bool settling(uint32_t member) override { return table_->settling(member); }
  bool quiescent() override { return table_->quiescent() && departing() == 0; }
  std::vector<uint32_t> members() override { return table_->live_members(); }
  uint64_t joins() override { return table_->joins(); }
  bool others_live() override { return table_->another_live() || departing() != 0; }
  bool add_listener(uint64_t entry) override { return table_->add_listener(entry); }
  void remove_listener(uint64_t entry) override { table_->remove_listener(entry); }
  std::vector<std::pair<uint32_t, uint64_t>> others_listeners() override {
    return table_->others_listeners();
  }
  void count_call() override { table_->count_call(); }
  uint64_t others_calls() override { return table_->others_calls(); }
  void set_settling(bool settling) override { table_->set_settling(settling); }
  bool another_settling() override {
    for (uint32_t member : table_->live_members())
      if (member != member_ && table_->settling(member)) return true;
    return false;
  }

 private:
  struct Peer {
    std::mutex mutex;
    // Guarded by `mutex`: the incarnation we talk to (0: none yet), and our
    // connection to it.
    uint64_t incarnation = 0;
    std::unique_ptr<OutgoingConnection> out;
    // Guarded by `mutex`: frames sent by send_expecting_answer() whose
    // answer has not come, counted down by every frame from the member
    // (so never more than are owed, which is what deferring relies on).
    uint32_t answers_owed = 0;
    // The service thread's: the connection from that incarnation, and ones
    // from newer incarnations waiting for it to be gone.
    IncomingConnection* in = nullptr;
    std::vector<IncomingConnection*> parked;
  };

  bool send_frame(uint32_t member, std::span<const std::span<const uint8_t>> parts,
                  bool expects_answer);
  // Members we have an admitted connection from whose departure is not
  // handled yet (deliver_gone) but whose table lock is gone: a bit each.
  uint64_t departing() const;
  // Leaves what is still queued for `member` to the service thread: its
  // socket's EPOLLOUT in the epoll set (the peer's mutex held).
  void arm_for_write_locked(uint32_t member, OutgoingConnection& out);
  // Writes the frames deferred to every member (send_expecting_answer).
  void flush_deferred();
  // Writes what is queued for the members in `members` (bit per member),
  // the rest on EPOLLOUT.
  void flush_to(uint64_t members);

  // Connects to `member` for a first send (peer.mutex held).
  bool connect_locked(uint32_t member, Peer& peer);

  // The service thread.
  static void* serve_thread(void* self);
  void serve();
  void accept_all();
  bool read_hello(IncomingConnection* connection);
  void admit(IncomingConnection* connection);
  void on_incoming(uint64_t id);
  // Writes what was queued while corked.
  void uncork();
  void on_outgoing(uint32_t member, uint64_t id, uint32_t events);
  void on_hangup(uint32_t member, uint64_t id);
  void deliver_gone(uint32_t member);
  void retire(IncomingConnection* connection);
  void watch(IncomingConnection* connection);
  void unwatch(IncomingConnection* connection);
  // IncomingConnection::Sink: hands a frame to the FrameHandler.
  void frame(const IncomingConnection& from, std::span<const uint8_t> bytes) override;

  const std::string fabric_;
  uint32_t member_ = 0;
  // Before the descriptors it lists, so it outlives them.
  OwnedFds fds_;
  std::unique_ptr<StatusTable> table_;
  OwnedFd epoll_;
  OwnedFd wake_;  // an eventfd: written to stop the service thread
  OwnedFd listener_;
  std::atomic<uint64_t> next_id_{1};
  std::array<Peer, kMaxMembers> peers_;

  FrameHandler on_frame_;
  PeerGoneHandler on_peer_gone_;
  bool started_ = false;
  pthread_t thread_{};
  // The service thread's: while it hands a batch of frames read from one
  // connection to the handler, what the handler sends is queued (`corked_`)
  // and written when the batch is done, one sendmsg(2) per member in
  // `corked_to_` (bit per member) instead of one per frame: the answers to
  // a window of requests wake the requester's service thread once.
  bool corked_ = false;
  uint64_t corked_to_ = 0;
  // The service thread's: frames handled in the current batch (they count
  // down the sender's answers_owed).
  uint32_t batch_frames_ = 0;
  // The service thread's: the outgoing connection deliver_gone() is
  // closing, out of its Peer and not yet destroyed. A member, not a local:
  // the program may exit in that moment, and LeakSanitizer, which sees this
  // thread's stack (StackSeenByLeakCheck), does not see its registers.
  std::unique_ptr<OutgoingConnection> closing_;
  // Members with frames deferred by send_expecting_answer's rule (bit per
  // member), set under their Peer::mutex; a hint for set_waiting(), which
  // must not lock every peer on every wait.
  std::atomic<uint64_t> deferred_to_{0};
  // Members with an admitted connection to us (bit per member): set by the
  // service thread when it admits one, cleared once their departure has
  // been handled (deliver_gone, after the PeerGoneHandler); read by any
  // thread (departing()).
  std::atomic<uint64_t> heard_from_{0};
  // Every incoming connection (not yet identified, admitted, parked), by id.
  std::unordered_map<uint64_t, std::unique_ptr<IncomingConnection>> incoming_;
};

}  // namespace verbfault::sim::wire
