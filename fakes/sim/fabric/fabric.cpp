#include "fabric.h"

#include "cm/connection_manager.h"

#include "device_nap.h"

#include "fabric_address.h"
#include "memory_region.h"
#include "profile_selection.h"
#include "remote.h"
#include "shared_memory.h"
#include "queue_pair.h"
#include "transport.h"

#include <pthread.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>

namespace verbfault::sim {

namespace {

constexpr int kDefaultDevices = 1;
constexpr int kMaxDevices = 16;

int configured_device_count() {
  const char* value = std::getenv("VERBFAULT_SIM_DEVICES");
  if (value == nullptr) return kDefaultDevices;
  char* end = nullptr;
  long n = std::strtol(value, &end, 10);
  if (*value == '\0' || *end != '\0' || n < 0 || n > kMaxDevices) {
    std::fprintf(stderr,
                 "verbfault: VERBFAULT_SIM_DEVICES='%s' is invalid: expected an integer "
                 "0..%d; using %d\n",
                 value, kMaxDevices, kDefaultDevices);
    return kDefaultDevices;
  }
  return static_cast<int>(n);
}

}  // namespace

void Fabric::notify_waiters() {
  wakeup.notify_all();
  wake_napping_threads();
}

cm::ConnectionManager& Fabric::connection_manager() {
  if (cm::ConnectionManager* made = connection_manager_.load(std::memory_order_relaxed))
    return *made;
  auto* made = new cm::ConnectionManager(*this);  // never destroyed, as the fabric
  connection_manager_.store(made, std::memory_order_release);
  return *made;
}

Fabric& process_fabric() {
  static Fabric* fabric = new Fabric();  // never destroyed (fabric.h)
  return *fabric;
}

bool Fabric::set_initial_freedom_seed(std::optional<std::uint64_t> seed) {
  std::lock_guard guard(initial_seed_mutex_);
  if (created_.load(std::memory_order_acquire)) return false;
  initial_freedom_seed_ = seed;
  return true;
}

Fabric::Fabric() : membership_(FabricMembership::from_environment()) {
  {
    std::lock_guard guard(initial_seed_mutex_);
    freedoms_.set_seed(initial_freedom_seed_);
    created_.store(true, std::memory_order_release);
  }
  next_qpn_ = first_qpn(membership_.member);
  if (!membership_.error.empty()) {
    // The devices are withheld: a process that cannot be told apart from
    // another member must not talk to anyone (it would talk to itself).
    std::fprintf(stderr, "%s; no simulated device is available\n", membership_.error.c_str());
    return;
  }
  const int n = configured_device_count();
  ProfileSelection selection = select_profiles(std::getenv("VERBFAULT_SIM_PROFILE"), n);
  if (!selection.error.empty()) {
    // Withheld as well: a device of another kind than the one asked for
    // would run the program against the wrong NIC without saying so.
    std::fprintf(stderr, "%s; no simulated device is available\n", selection.error.c_str());
    return;
  }
  for (int i = 0; i < n; ++i)
    devices_.push_back(std::make_unique<Device>(
        *this, i, membership_.member, std::move(selection.profiles[static_cast<size_t>(i)])));
  // Until its first verbs call (enter() clears it) the process does nothing
  // on the fabric, and counts as waiting in its device: a process that
  // joined only to show its devices (mpirun, whose hwloc reads the served
  // /sys/class/infiniband) never makes one, and must not keep the others'
  // fabric from ever being quiescent.
  if (membership_.endpoint != nullptr) {
    membership_.endpoint->set_waiting(true);
    marked_waiting_ = true;
  }
  // A child made by fork(2) is not the member its parent is: it drops its
  // copies of the wire's descriptors (so that peers see the parent gone
  // when the parent goes, not when the last child does). Until it opens a
  // device or a CM file of its own it has no fabric; then it joins as a
  // new member (rejoin_after_fork), as a process started anew would.
  // Fabric::mutex is taken around fork(2): the child must not inherit it
  // held by the service thread, which it does not have. The shared
  // segments' handlers first, so that fork(2) takes Fabric::mutex before
  // theirs, as ibv_reg_mr does (shared_memory::install_fork_handlers).
  shared_memory::install_fork_handlers();
  pthread_atfork([] { process_fabric().mutex.lock(); }, [] { process_fabric().mutex.unlock(); },
                 [] {
                   Fabric& fabric = process_fabric();
                   fabric.mutex.unlock();
                   fabric.leave_after_fork();
                 });
}

void Fabric::leave_after_fork() {
  rejoin_pending_.store(membership_.endpoint != nullptr, std::memory_order_relaxed);
  wire::Endpoint::abandon_after_fork(membership_.endpoint);
  service_started_ = false;
  marked_waiting_ = false;
  peers_ = 0;
  not_holding_for_ = 0;
  gave_up_at_calls_.reset();
  remote::forget_held_after_fork();
}

std::optional<uint32_t> Fabric::member_with_lid(uint16_t lid) const {
  if (membership_.endpoint == nullptr || lid == 0 || lid >= 0xc000) return std::nullopt;
  const uint32_t member = member_of_lid(lid);
  if (member == membership_.member || member >= wire::kMaxMembers) return std::nullopt;
  return member;
}

void Fabric::rejoin_after_fork() {
  if (!rejoin_pending()) return;
  rejoin_pending_.store(false, std::memory_order_relaxed);
  FabricMembership joined = FabricMembership::for_forked_child();
  if (joined.endpoint == nullptr) {
    // Off the fabric, as before: its devices reach each other only.
    std::fprintf(stderr, "verbfault: a child made by fork(2) stays off the fabric: %s\n",
                 joined.error.empty() ? "no fabric" : joined.error.c_str());
    return;
  }
  membership_ = std::move(joined);
  next_qpn_ = first_qpn(membership_.member);
  for (auto& device : devices_) device->readdress(membership_.member);
  // As a new process: waiting in its device until its first verbs call.
  membership_.endpoint->set_waiting(true);
  marked_waiting_ = true;
}

wire::Endpoint* Fabric::endpoint() {
  rejoin_after_fork();
  wire::Endpoint* endpoint = membership_.endpoint.get();
  if (endpoint != nullptr && !service_started_) {
    service_started_ = true;
    endpoint->start(
        [this](uint32_t from, std::span<const uint8_t> frame) { remote::on_frame(*this, from, frame); },
        [this](uint32_t member) { remote::on_peer_gone(*this, member); });
    // The endpoint is never destroyed (process_fabric()), so what it still
    // queues at exit(3) would be lost: an answer whose request the
    // application has already seen complete (a receive taken by a poll
    // just before return from main) must reach the requester, as a NIC's
    // ACK leaves before the CQE it goes with is written. Not under
    // `mutex`: the service thread may hold it while it waits for nothing
    // of ours. A child made by fork(2) has no endpoint and drains nothing.
    static const bool registered = [] {
      std::atexit([] {
        if (wire::Endpoint* wire = process_fabric().membership_.endpoint.get())
          wire->drain(std::chrono::seconds(2));
      });
      return true;
    }();
    (void)registered;
  }
  return endpoint;
}

Device* Fabric::device_with_lid(uint16_t lid) {
  for (auto& device : devices_)
    if (!device->ethernet() && device->lid() == lid) return device.get();
  return nullptr;
}

Device* Fabric::device_with_gid(const ibv_gid& gid) {
  // The address plan says which device it must be; its table (which a
  // fault may have changed) says whether it still answers to it.
  std::optional<FabricNode> node = node_of_gid(gid);
  if (!node) {
    // Not an address of the plan: a GID a fault set (set_gid) may hold it.
    for (auto& device : devices_)
      if (device->ethernet() && device->find_gid(gid) >= 0) return device.get();
    return nullptr;
  }
  if (node->member != membership_.member || static_cast<size_t>(node->device) >= devices_.size())
    return nullptr;
  Device* device = devices_[static_cast<size_t>(node->device)].get();
  return device->ethernet() && device->find_gid(gid) >= 0 ? device : nullptr;
}

std::optional<uint32_t> Fabric::member_with_gid(const ibv_gid& gid) const {
  if (membership_.endpoint == nullptr) return std::nullopt;
  std::optional<FabricNode> node = node_of_gid(gid);
  if (!node || node->member == membership_.member || node->member >= wire::kMaxMembers)
    return std::nullopt;
  return node->member;
}

Device* Fabric::device_at(const Device& from, const ibv_ah_attr& ah) {
  return from.ethernet() ? device_with_gid(ah.grh.dgid) : device_with_lid(ah.dlid);
}

std::optional<uint32_t> Fabric::member_at(const Device& from, const ibv_ah_attr& ah) const {
  return from.ethernet() ? member_with_gid(ah.grh.dgid) : member_with_lid(ah.dlid);
}

uint32_t Fabric::reserve_qpn() {
  // QPNs come from the member's range, wrapping inside it; skip any number
  // still in use.
  const uint32_t first = first_qpn(membership_.member), end = end_qpn(membership_.member);
  auto step = [&](uint32_t q) { return q + 1 < end ? q + 1 : first; };
  while (next_qpn_ < first || next_qpn_ >= end || qps_.count(next_qpn_))
    next_qpn_ = step(next_qpn_);
  uint32_t qpn = next_qpn_;
  next_qpn_ = step(next_qpn_);
  qps_[qpn] = nullptr;
  return qpn;
}

QueuePair* Fabric::find_qp(uint32_t qpn) const {
  auto it = qps_.find(qpn);
  return it == qps_.end() ? nullptr : it->second;
}

uint32_t Fabric::reserve_mr_key() {
  // lkey == rkey == index << 8 | a key byte that changes with the index, so
  // that a stale key of a freed region is unlikely to match a new one.
  uint32_t key;
  do {
    uint32_t index = next_mr_index_++ & 0xffffff;
    key = (index << 8) | ((index * 0x9d) & 0xff);
  } while (key == 0 || mrs_.count(key));
  mrs_[key] = nullptr;
  return key;
}

MemoryRegion* Fabric::find_mr(uint32_t key) const {
  auto it = mrs_.find(key);
  return it == mrs_.end() ? nullptr : it->second;
}

bool Fabric::deadline_pending() const {
  for (QueuePair* qp : waiting_)
    if (!qp->send_queue().empty() &&
        qp->send_queue().front().not_before_ns != std::numeric_limits<uint64_t>::max())
      return true;
  // An id in the connection manager's timewait: TIMEWAIT_EXIT will come.
  const cm::ConnectionManager* manager = existing_connection_manager();
  return manager != nullptr && manager->next_deadline().has_value();
}

bool Fabric::advance_clock() {
  cm::ConnectionManager* manager = existing_connection_manager();
  const std::optional<uint64_t> cm_next = manager ? manager->next_deadline() : std::nullopt;
  if (waiting_.empty() && !cm_next) return false;
  uint64_t next = cm_next.value_or(std::numeric_limits<uint64_t>::max());
  for (QueuePair* qp : waiting_) {
    if (!qp->send_queue().empty()) next = std::min(next, qp->send_queue().front().not_before_ns);
  }
  if (next == std::numeric_limits<uint64_t>::max()) {
    waiting_.clear();
    return false;
  }
  clock_.advance_to(next);
  // Retry in QPN order: the order must not depend on pointer values.
  std::vector<QueuePair*> due;
  for (QueuePair* qp : waiting_)
    if (!qp->send_queue().empty() && qp->send_queue().front().not_before_ns <= clock_.now())
      due.push_back(qp);
  std::sort(due.begin(), due.end(), [](QueuePair* a, QueuePair* b) { return a->qpn() < b->qpn(); });
  for (QueuePair* qp : due) {
    waiting_.erase(qp);
    qp->send_queue().front().waiting = false;
    requester::progress(*qp);
  }
  if (manager != nullptr) manager->expire(clock_.now());
  return true;
}

}  // namespace verbfault::sim
