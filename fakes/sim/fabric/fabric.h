// The simulated fabric: every simulated device of the process, the links
// between them, and the one lock that guards the whole device model.
#pragma once

#include "device.h"
#include "fabric_membership.h"
#include "freedoms.h"
#include "invariant.h"
#include "virtual_clock.h"

#include <array>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <span>
#include <unordered_map>
#include <vector>

namespace verbfault::sim {

namespace cm {
class ConnectionManager;
}
class Context;
class MemoryRegion;
class QueuePair;

// Thread safety: `mutex` guards every object of the device model (devices'
// port state, contexts and everything created on them, the clock). A verbs
// call takes it once, at the provider entry point, and runs to completion
// under it; a message moves from requester to responder to completer
// without releasing it, so no interleaving of threads is ever observable
// inside the device. Threads that wait for an event (ibv_get_cq_event,
// ibv_get_async_event in blocking mode) sleep on `wakeup` without it.
class Fabric {
 public:
  Fabric(const Fabric&) = delete;
  Fabric& operator=(const Fabric&) = delete;

  // Whether the process's fabric was made (process_fabric(), at first use).
  static bool exists() { return created_.load(std::memory_order_acquire); }
  // Before the fabric exists: keeps `seed` for its Freedoms and returns
  // true. Once it exists: false (set it through freedoms()).
  static bool set_initial_freedom_seed(std::optional<std::uint64_t> seed);

  std::mutex mutex;
  // Threads waiting in the device sleep in device_nap.h's timers; a few
  // waits that need no interruption (a destroy waiting for acks) on this.
  // Notify through notify_waiters(), which reaches both.
  std::condition_variable wakeup;
  // Under `mutex`: something a waiting thread may wait for happened.
  void notify_waiters();

  // A verbs call entering the device: takes `mutex` and starts a new step.
  // `uncounted`: the call counts as one the peers see (count_call) only
  // if it turns out to do something (a poll that returns a completion);
  // the caller counts it then.
  enum class Call { counted, uncounted };
  std::unique_lock<std::mutex> enter(Call call = Call::counted) {
    std::unique_lock guard(mutex);
    next_step();
    end_outside();
    if (call == Call::counted) count_call();
    return guard;
  }
  // The service thread handling a frame (remote.cpp): not a verbs call.
  std::unique_lock<std::mutex> enter_from_wire() {
    std::unique_lock guard(mutex);
    stop_waiting();
    return guard;
  }

  std::vector<std::unique_ptr<Device>>& devices() { return devices_; }
  // Its rdma_cm, made at the first CM file (cm_files.cpp), under `mutex`.
  cm::ConnectionManager& connection_manager();
  // The rdma_cm if a CM file was ever opened (nullptr before): asked on
  // the device's paths, which must not make it; read without `mutex`.
  cm::ConnectionManager* existing_connection_manager() const {
    return connection_manager_.load(std::memory_order_acquire);
  }
  // Open contexts, in the order they were opened (async events of a device
  // go to each of them).
  std::vector<Context*>& contexts() { return contexts_; }
  // The device of this process at an address: an InfiniBand port's LID, a
  // RoCE port's GID (IBTA A17.4: RoCE is routed by the GRH's DGID; there
  // are no LIDs). nullptr: none here.
  Device* device_with_lid(uint16_t lid);
  Device* device_with_gid(const ibv_gid& gid);
  // Where an address vector used on `from` leads: by DGID when `from` is a
  // RoCE port, by DLID otherwise.
  Device* device_at(const Device& from, const ibv_ah_attr& ah);

  // The local fabric (fabric_membership.h): this process's member index
  // (its LIDs and QP numbers follow from it, fabric_address.h), and the
  // member that owns a LID no device of this process has (nullopt: none,
  // or no fabric).
  uint32_t member() const { return membership_.member; }
  std::optional<uint32_t> member_with_lid(uint16_t lid) const;
  std::optional<uint32_t> member_with_gid(const ibv_gid& gid) const;
  std::optional<uint32_t> member_at(const Device& from, const ibv_ah_attr& ah) const;
  // The wire to the other members, its service thread started; nullptr
  // when the process is on no fabric. Called under `mutex`.
  wire::Endpoint* endpoint();
  bool service_started() const { return service_started_; }
  // The wire if its service thread runs (nullptr otherwise): what a wait
  // for another process needs.
  wire::Endpoint* started_endpoint() {
    return service_started_ ? membership_.endpoint.get() : nullptr;
  }
  // VERBFAULT_FABRIC_SIZE: the members the run expects (0: not said).
  uint32_t expected_members() const { return membership_.expected; }
  // While a frame from another process is handled (remote.cpp): the
  // completions it makes are held in their CQs (delivery.h).
  bool holding_deliveries() const { return holding_deliveries_; }
  void set_holding_deliveries(bool holding) { holding_deliveries_ = holding; }
  // Frames handled and quiescence actions taken so far: a wait for
  // another process sees progress (fabric_wait.h).
  uint64_t activity() const { return activity_; }
  void count_activity() { ++activity_; }
  // Whether this process is marked waiting in the status table
  // (wire::Endpoint::set_waiting): set by a fabric wait; cleared by the
  // next verbs call (enter()) or frame, and by the wait's end.
  void set_marked_waiting(bool waiting) { marked_waiting_ = waiting; }
  void mark_waiting() {
    if (wire::Endpoint* endpoint = started_endpoint()) {
      endpoint->set_waiting(true);
      marked_waiting_ = true;
    }
  }
  // A verbs call of the application: the peers see this process in verbs
  // (wire::Endpoint::count_call), and members it gave up on may be
  // waited for again (fabric_wait.h).
  void count_call() {
    if (wire::Endpoint* endpoint = started_endpoint()) endpoint->count_call();
    not_holding_for_ = 0;
  }
  // The members whose requests this process does not hold for a receive
  // WR (remote.cpp): they gave up waiting for it while its application was
  // outside verbs; until its next verbs call. Bit per member index.
  uint64_t not_holding_for() const { return not_holding_for_; }
  void stop_holding_for(uint32_t member) { not_holding_for_ |= uint64_t{1} << member; }
  // A wait that gave up on the peers (fabric_wait.h): the sum of their
  // verbs calls then; no wait blocks again until it moves. nullopt: none.
  std::optional<uint64_t>& gave_up_at_calls() { return gave_up_at_calls_; }
  void stop_waiting() {
    if (!marked_waiting_) return;
    marked_waiting_ = false;
    // The wire as joined, its service thread started or not: the mark the
    // constructor set comes before the thread starts. Waiting first, then
    // outside (the reverse of mark_outside): a peer that sees the mark
    // sees what it stands for.
    if (wire::Endpoint* endpoint = membership_.endpoint.get()) {
      endpoint->set_waiting(false);
      if (marked_outside_) endpoint->set_outside(false);
    }
    marked_outside_ = false;
  }
  // Every application thread waits outside the device, on `fds` (sockets,
  // a listening socket, and under the thread scheduler the channels of
  // threads blocked in ibv_get_cq_event): the harness says so
  // (outside_wait.cpp). The process counts as waiting for its peers'
  // quiescence while none of them is readable, looked at here and again
  // after every frame, all under `mutex`: a frame that makes a channel
  // readable (remote.cpp raises the event under it) never leaves the mark
  // behind it, and a peer's request to look again (a socket it wrote to)
  // is answered by a fresh look. False: one of them is readable now (no
  // mark). end_outside(): the wait is over; so is it at the next verbs call.
  // `keep_waiting`: a thread of the process waits in the device (its mark
  // stays). forget_outside_fds(): no look after frames any more, the mark
  // stays until the next frame or verbs call (the thread scheduler's
  // decider between its looks, provider.cpp).
  bool begin_outside(std::span<const int> fds);
  bool marked_outside() const { return marked_outside_; }
  void look_outside();
  void end_outside(bool keep_waiting = false);
  void forget_outside_fds();
  // The step (verbs call) at which this process last asked `member` to
  // look again at what its threads wait on outside the device
  // (fabric_wait.cpp): once per call, after what the application did
  // before it (a write to a socket the member reads).
  uint64_t& asked_to_look_at(uint32_t member) { return asked_to_look_at_[member]; }
  // Members this process has exchanged frames with and that are not known
  // to be gone: while there is one, work may arrive without any verbs call
  // of this process, so no wait here is provably endless.
  void note_peer(uint32_t member) { peers_ |= uint64_t{1} << member; }
  void forget_peer(uint32_t member) { peers_ &= ~(uint64_t{1} << member); }
  bool peers_may_send() const { return peers_ != 0; }

  // In a child made by fork(2) (pthread_atfork): leaves the fabric.
  void leave_after_fork();
  // In such a child whose parent was a member: at its first device or CM
  // file of its own (open_device, the CM's open_file) it joins the fabric
  // afresh as a new member, its devices readdressed to that member (what
  // the parent opened is the parent's: ibv_fork_init(3)). Under `mutex`.
  void rejoin_after_fork();
  // Whether rejoin_after_fork has something to do (read without `mutex`:
  // set in the child's fork handler, before any thread of the child runs).
  bool rejoin_pending() const { return rejoin_pending_.load(std::memory_order_relaxed); }

  // A fresh QPN, reserved until bind_qp() or unregister_qp().
  uint32_t reserve_qpn();
  void bind_qp(uint32_t qpn, QueuePair* qp) {
    const auto slot = qps_.find(qpn);
    VERBFAULT_ASSERT(slot != qps_.end() && slot->second == nullptr,
                     "a QPN is bound once, to the QP it was reserved for");
    slot->second = qp;
  }
  void unregister_qp(uint32_t qpn) { qps_.erase(qpn); }
  QueuePair* find_qp(uint32_t qpn) const;

  // A fresh lkey/rkey, reserved until bind_mr() or unregister_mr().
  uint32_t reserve_mr_key();
  void bind_mr(uint32_t key, MemoryRegion* mr) {
    const auto slot = mrs_.find(key);
    VERBFAULT_ASSERT(slot != mrs_.end() && slot->second == nullptr,
                     "an lkey/rkey is bound once, to the MR it was reserved for");
    slot->second = mr;
  }
  void unregister_mr(uint32_t key) { mrs_.erase(key); }
  MemoryRegion* find_mr(uint32_t key) const;

  // Creation index of an object of the given kind ("cq#3"): stable from
  // run to run, used in diagnostics and as the ibv_* handle field.
  enum class Kind { kPd, kMr, kAh, kCq, kSrq, kQp, kCount };
  uint32_t next_index(Kind kind) { return next_index_[static_cast<int>(kind)]++; }

  VirtualClock& clock() { return clock_; }
  // The choices the verbs leave to the provider, drawn from the seed.
  Freedoms& freedoms() { return freedoms_; }
  // Verbs calls so far: completions that enter a CQ in the same step may
  // be reordered across work queues (Freedoms), never across steps.
  std::uint64_t step() const { return step_; }
  void next_step() { ++step_; }
  // QPs whose send queue head waits for a virtual-time deadline.
  void schedule(QueuePair* qp) { waiting_.insert(qp); }
  void unschedule(QueuePair* qp) { waiting_.erase(qp); }
  // Jumps the clock to the earliest deadline and retries the QPs due then.
  // Returns false when no deadline is pending.
  bool advance_clock();
  // Whether a retry is scheduled on the virtual clock: work that can still
  // complete without any further verbs call.
  bool deadline_pending() const;

 private:
  // One per process (its fork handlers, the wire's membership, its
  // devices' addresses are the process's): process_fabric() makes it.
  friend Fabric& process_fabric();
  Fabric();

  std::vector<std::unique_ptr<Device>> devices_;
  // Never destroyed, as the fabric: made under `mutex`, read without it.
  std::atomic<cm::ConnectionManager*> connection_manager_{nullptr};
  std::vector<Context*> contexts_;
  std::unordered_map<uint32_t, QueuePair*> qps_;
  std::unordered_map<uint32_t, MemoryRegion*> mrs_;
  FabricMembership membership_;
  std::atomic<bool> rejoin_pending_{false};  // a forked child of a member, not rejoined yet
  bool service_started_ = false;
  bool holding_deliveries_ = false;
  uint64_t activity_ = 0;
  void mark_outside();

  bool marked_waiting_ = false;
  bool marked_outside_ = false;   // the mark is begin_outside's
  std::vector<int> outside_fds_;  // begin_outside's fds until end_outside
  uint64_t not_holding_for_ = 0;
  std::optional<uint64_t> gave_up_at_calls_;
  uint64_t peers_ = 0;  // bit per member index (wire::kMaxMembers == 64)
  std::array<uint64_t, 64> asked_to_look_at_ = make_never_asked();
  static constexpr std::array<uint64_t, 64> make_never_asked() {
    std::array<uint64_t, 64> never{};
    never.fill(~uint64_t{0});
    return never;
  }
  uint32_t next_qpn_ = 0;  // in the member's range (fabric_address.h)
  uint32_t next_mr_index_ = 1;
  uint32_t next_index_[static_cast<int>(Kind::kCount)] = {};
  VirtualClock clock_;
  Freedoms freedoms_;
  std::uint64_t step_ = 0;
  std::set<QueuePair*> waiting_;
  static inline std::atomic<bool> created_{false};
  // Guarded by initial_seed_mutex_ until the fabric exists.
  static inline std::mutex initial_seed_mutex_;
  static inline std::optional<std::uint64_t> initial_freedom_seed_;
};

// The process's fabric, made at its first use and never destroyed (verbs
// calls from atexit handlers and static destructors must still find it).
// Only the device's entry points call it: the verbs of provider.cpp that
// name no object, the connection manager's files (cm_files.cpp), the
// served system files, the wire's service thread (remote.cpp) and the
// harness's conditions. Everything below them is handed the fabric, or
// reaches it through the object it acts on (Device::fabric()).
Fabric& process_fabric();

// A verbs call entering the process's device: what its entry points begin
// with (Fabric::enter).
inline std::unique_lock<std::mutex> enter_device(Fabric::Call call = Fabric::Call::counted) {
  return process_fabric().enter(call);
}

}  // namespace verbfault::sim
