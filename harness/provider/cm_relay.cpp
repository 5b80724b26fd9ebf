#include "cm_relay.h"

#include "descriptor_set.h"
#include "ucma_abi.h"
#include "verbfault/sim/cm.h"

#include <endian.h>
#include <fcntl.h>
#include <infiniband/verbs.h>
#include <netinet/in.h>  // before the kernel header: see sim/cm/connection_manager.h
#include <poll.h>
#include <rdma/rdma_user_cm.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <unordered_map>
#include <vector>

namespace verbfault::provider::cm_relay {

namespace {

// The descriptors below are the C library's calls made as system calls:
// this library exports poll, read, write, close and fstat for the program,
// and a call of its own must not come back through them.
ssize_t sys_write(int fd, const void* buffer, std::size_t length) {
  return static_cast<ssize_t>(::syscall(SYS_write, fd, buffer, length));
}
ssize_t sys_read(int fd, void* buffer, std::size_t length) {
  return static_cast<ssize_t>(::syscall(SYS_read, fd, buffer, length));
}
int sys_close(int fd) {
  return static_cast<int>(::syscall(SYS_close, fd));
}
int sys_flags(int fd) {
  return static_cast<int>(::syscall(SYS_fcntl, fd, F_GETFL));
}

using ucma::command_of;
using ucma::kAddrChange;
using ucma::kAddrError;
using ucma::kConnectRequest;
using ucma::kDeviceRemoval;
using ucma::kDisconnected;
using ucma::kMulticastError;
using ucma::kMulticastJoin;
using ucma::kRejected;
using ucma::kRouteError;
using ucma::kUnreachable;

// A join's event names the join (its handle in the kernel's multicast
// table, apart from the ids'), not the id that joined.
bool multicast(const rdma_ucm_event_resp& event) {
  return event.event == kMulticastJoin || event.event == kMulticastError;
}

// The relays below DescriptorSet::kLimit. A relay numbered above (a
// program with a raised descriptor limit) is looked up in relays() under
// the lock, once one exists (g_high_relays).
DescriptorSet g_relay_fds;
std::atomic<bool> g_high_relays{false};

void mark(int fd, bool on) {
  if (!DescriptorSet::fits(fd)) {
    if (on) g_high_relays.store(true, std::memory_order_release);
    return;
  }
  if (on)
    g_relay_fds.insert(fd);
  else
    g_relay_fds.erase(fd);
}

// An event waiting in a relay to be read. `counted`: the inner file
// reported it (its id's events_reported counts it); a made one is not.
struct Queued {
  rdma_ucm_event_resp event{};
  bool counted = false;
  bool released = false;  // a held one whose delay ended
};

struct Relay {
  int inner = -1;
  bool simulated = false;
  int ready = -1;  // eventfd (semaphore): one count per queued event
  int timer = -1;  // timerfd: armed for the first held event's due time
  std::deque<Queued> queued;
  std::multimap<std::uint64_t, Queued> held;  // by due time, CLOCK_MONOTONIC ns
  std::optional<Queued> last;                 // what GET_EVENT just returned
};

// What the relays know of an id (its handle is one per process).
struct Id {
  std::uint64_t uid = 0;  // librdmacm's cookie, for an event made for it
  bool ud = false;
  unsigned withdrawn = 0;            // reported by the kernel, withdrawn here
  unsigned disconnects_to_drop = 0;  // the kernel's DISCONNECTED after a made one
  int file = -1;                     // the relay its events go to, once known
};

// What the relays know of a join: the id that made it (the kernel counts a
// join's event on both, ucma_get_event: ctx and mc) and its own
// withdrawn events, as an id's.
struct Join {
  std::uint32_t id = 0;
  unsigned withdrawn = 0;
  bool full_member = false;
  bool shown = false;  // its group shown as heard (after its MULTICAST_JOIN)
};

// What the relay shows the system (sim::cm::show_listening) of the
// kernel's ids: an id that listens by its handle, a join that hears its
// group by this base plus the join's handle (the kernel's multicast table
// is apart from its ids'), so that `verbfault run` starts a client once
// its server listens or joined, as on the simulated fabric.
constexpr unsigned kJoinShown = 0x80000000u;

std::mutex g_mutex;  // guards relays(), ids() and joins()

std::unordered_map<int, Relay>& relays() {
  static auto* relays = new std::unordered_map<int, Relay>();  // lives to _exit
  return *relays;
}

std::unordered_map<std::uint32_t, Id>& ids() {
  static auto* ids = new std::unordered_map<std::uint32_t, Id>();  // lives to _exit
  return *ids;
}

std::unordered_map<std::uint32_t, Join>& joins() {
  static auto* joins = new std::unordered_map<std::uint32_t, Join>();  // lives to _exit
  return *joins;
}

void forget_join(std::unordered_map<std::uint32_t, Join>::iterator join) {
  if (join->second.shown) sim::cm::hide_listening(kJoinShown + join->first);
  joins().erase(join);
}

// An id's end ends its joins (ucma_destroy_private_ctx cleans up its
// multicast).
void forget_id(std::uint32_t handle) {
  sim::cm::hide_listening(handle);
  for (auto join = joins().begin(); join != joins().end();)
    if (join->second.id == handle)
      forget_join(join++);
    else
      ++join;
  ids().erase(handle);
}

Relay* find(int fd) {
  const auto found = relays().find(fd);
  return found == relays().end() ? nullptr : &found->second;
}

std::uint64_t now_ns() {
  timespec now{};
  clock_gettime(CLOCK_MONOTONIC, &now);
  return static_cast<std::uint64_t>(now.tv_sec) * 1'000'000'000 +
         static_cast<std::uint64_t>(now.tv_nsec);
}

ssize_t inner_write(int inner, bool simulated, const void* buffer, std::size_t length) {
  return simulated ? sim::cm::write(inner, buffer, length) : sys_write(inner, buffer, length);
}

ssize_t inner_write(const Relay& relay, const void* buffer, std::size_t length) {
  return inner_write(relay.inner, relay.simulated, buffer, length);
}

// A command of the relay's own (`command`, whose `response` is set here to
// `out`) written to the inner file: whether it succeeded.
template <class Command, class Response>
bool ask(int inner, bool simulated, std::uint32_t cmd, Command command, Response& out) {
  struct {
    rdma_ucm_cmd_hdr header;
    Command command;
  } written{};
  written.header.cmd = cmd;
  written.header.in = sizeof written.command;
  written.header.out = sizeof out;
  command.response = reinterpret_cast<std::uintptr_t>(&out);
  written.command = command;
  return inner_write(inner, simulated, &written, sizeof written) >= 0;
}

// The id whose events_reported counts `event` (the kernel's ucma_get_event
// counts on uevent->ctx): a CONNECT_REQUEST's listener, which the event
// names by its uid; a join's event's joining id; nullopt for a join not
// known here.
std::optional<std::uint32_t> counted_on(const rdma_ucm_event_resp& event) {
  if (multicast(event)) {
    const auto join = joins().find(event.id);
    if (join == joins().end()) return std::nullopt;
    return join->second.id;
  }
  if (event.event == kConnectRequest)
    for (const auto& [handle, id] : ids())
      if (id.uid == event.uid) return handle;
  return event.id;
}

// An event the relay had from the kernel and the program never will: off
// the counts the kernel keeps of it (its id's and its join's).
void withdraw(const rdma_ucm_event_resp& event) {
  if (const auto id = counted_on(event)) ++ids()[*id].withdrawn;
  if (multicast(event))
    if (const auto join = joins().find(event.id); join != joins().end()) ++join->second.withdrawn;
}

void enqueue(Relay& relay, const Queued& queued) {
  relay.queued.push_back(queued);
  const std::uint64_t one = 1;
  sys_write(relay.ready, &one, sizeof one);
}

Queued made(std::uint32_t handle, ucma::Event type, int status) {
  Queued queued;
  queued.event.uid = ids()[handle].uid;
  queued.event.id = handle;
  queued.event.event = type;
  queued.event.status = static_cast<std::uint32_t>(status);
  return queued;
}

void arm_timer(const Relay& relay) {
  itimerspec when{};
  if (!relay.held.empty()) {
    const std::uint64_t due = relay.held.begin()->first;
    when.it_value.tv_sec = static_cast<time_t>(due / 1'000'000'000);
    when.it_value.tv_nsec = static_cast<long>(due % 1'000'000'000);
    if (when.it_value.tv_sec == 0 && when.it_value.tv_nsec == 0) when.it_value.tv_nsec = 1;
  }
  timerfd_settime(relay.timer, TFD_TIMER_ABSTIME, &when, nullptr);
}

// The events the inner file has now, read into the queue (counted), so
// that a released one comes behind them, as behind what came meanwhile.
void drain(Relay& relay) {
  for (;;) {
    rdma_ucm_event_resp event{};
    rdma_ucm_get_event get{};
    if (!ask(relay.inner, relay.simulated, RDMA_USER_CM_CMD_GET_EVENT, get, event)) return;
    Queued queued;
    queued.event = event;
    queued.counted = true;
    enqueue(relay, queued);
  }
}

// Held events whose time came join the queue.
void release_due(Relay& relay) {
  if (relay.held.empty() || relay.held.begin()->first > now_ns()) return;
  std::uint64_t expirations = 0;
  sys_read(relay.timer, &expirations, sizeof expirations);
  drain(relay);
  const std::uint64_t now = now_ns();
  while (!relay.held.empty() && relay.held.begin()->first <= now) {
    enqueue(relay, relay.held.begin()->second);
    relay.held.erase(relay.held.begin());
  }
  arm_timer(relay);
}

// The kernel's DISCONNECTED that a made one stood for: dropped, and off
// the id's count.
bool dropped(const rdma_ucm_event_resp& event) {
  if (event.event != kDisconnected) return false;
  const auto found = ids().find(event.id);
  if (found == ids().end() || found->second.disconnects_to_drop == 0) return false;
  --found->second.disconnects_to_drop;
  ++found->second.withdrawn;
  return true;
}

// A full member's join is heard from its MULTICAST_JOIN on: librdmacm
// attaches the id's QP to the group while it reads the event
// (ucma_process_join), so a sender started after can reach it.
void note_delivered(const rdma_ucm_event_resp& event) {
  if (event.event != kMulticastJoin || event.status != 0) return;
  const auto join = joins().find(event.id);
  if (join == joins().end() || !join->second.full_member || join->second.shown) return;
  join->second.shown = true;
  sim::cm::show_listening(kJoinShown + event.id);
}

ssize_t get_event(int fd, const void* buffer, std::size_t length) {
  const auto command = command_of<rdma_ucm_get_event>(buffer, length);
  rdma_ucm_cmd_hdr header{};
  std::memcpy(&header, buffer, sizeof header);
  if (!command || command->response == 0) {
    errno = EINVAL;
    return -1;
  }
  auto* response = reinterpret_cast<void*>(static_cast<std::uintptr_t>(command->response));
  for (;;) {
    Relay* relay = find(fd);
    if (relay == nullptr) {
      errno = EBADF;
      return -1;
    }
    release_due(*relay);
    if (!relay->queued.empty()) {
      const Queued next = relay->queued.front();
      relay->queued.pop_front();
      std::uint64_t one = 0;
      sys_read(relay->ready, &one, sizeof one);
      if (next.counted && !next.released && dropped(next.event)) continue;
      std::memcpy(response, &next.event, std::min<std::size_t>(header.out, sizeof next.event));
      relay->last = next;
      if (!relay->simulated) note_delivered(next.event);
      return static_cast<ssize_t>(length);
    }
    const ssize_t result = inner_write(*relay, buffer, length);
    if (result >= 0) {
      Queued read;
      std::memcpy(&read.event, response, std::min<std::size_t>(header.out, sizeof read.event));
      read.counted = true;
      if (dropped(read.event)) continue;
      relay->last = read;
      if (!relay->simulated) note_delivered(read.event);
      return result;
    }
    // Nothing yet: EAGAIN, blocking file or not. The caller waits for the
    // set as a read(2) of the kernel's file would (interposer/cm_files.cpp:
    // restarted after a handler with SA_RESTART, in the scheduler for a
    // scheduled thread) and asks again.
    return -1;
  }
}

// Whether `event` is one of id `handle`'s: its own, or counted on it (a
// join's event names the join, whose handle may equal an id's).
bool of_id(const rdma_ucm_event_resp& event, std::uint32_t handle) {
  return (!multicast(event) && event.id == handle) || counted_on(event) == handle;
}

bool of_join(const rdma_ucm_event_resp& event, std::uint32_t join) {
  return multicast(event) && event.id == join;
}

// The events `of` still queued or held in any relay: gone (with their id,
// or their join); returned: how many of them the kernel counted.
template <class Of>
unsigned drop_events(Of of) {
  unsigned counted = 0;
  for (auto& [fd, relay] : relays()) {
    for (auto it = relay.queued.begin(); it != relay.queued.end();) {
      if (of(it->event)) {
        counted += it->counted ? 1 : 0;
        std::uint64_t one = 0;
        sys_read(relay.ready, &one, sizeof one);
        it = relay.queued.erase(it);
      } else {
        ++it;
      }
    }
    for (auto it = relay.held.begin(); it != relay.held.end();) {
      if (of(it->second.event)) {
        counted += it->second.counted ? 1 : 0;
        it = relay.held.erase(it);
      } else {
        ++it;
      }
    }
    arm_timer(relay);
  }
  return counted;
}

// The events of id `handle` the kernel reported to the relay and the
// program has not had yet (queued or held in any relay).
unsigned undelivered_of(std::uint32_t handle) {
  unsigned counted = 0;
  for (const auto& [fd, relay] : relays()) {
    for (const Queued& queued : relay.queued)
      counted += queued.counted && of_id(queued.event, handle) ? 1 : 0;
    for (const auto& [due, held] : relay.held)
      counted += held.counted && of_id(held.event, handle) ? 1 : 0;
  }
  return counted;
}

// rdma_migrate_id: id `handle`'s queued and held events move from `from`
// to `to`, in their order (collected first: `to` is another relay).
void move_events_of(std::uint32_t handle, Relay& from, Relay& to) {
  std::vector<Queued> moving;
  for (auto it = from.queued.begin(); it != from.queued.end();) {
    if (!of_id(it->event, handle)) {
      ++it;
      continue;
    }
    std::uint64_t one = 0;
    sys_read(from.ready, &one, sizeof one);
    moving.push_back(*it);
    it = from.queued.erase(it);
  }
  for (const Queued& queued : moving) enqueue(to, queued);
  for (auto it = from.held.begin(); it != from.held.end();) {
    if (!of_id(it->second.event, handle)) {
      ++it;
      continue;
    }
    to.held.emplace(it->first, it->second);
    it = from.held.erase(it);
  }
  arm_timer(from);
  arm_timer(to);
}

// The events a count (DESTROY_ID's, MIGRATE_ID's, LEAVE_MCAST's response)
// must lose: those withdrawn here, never to be acknowledged.
void subtract(std::uint64_t response, unsigned less) {
  if (response == 0) return;
  auto* reported = reinterpret_cast<std::uint32_t*>(static_cast<std::uintptr_t>(response));
  *reported = *reported > less ? *reported - less : 0;
}

void correct_count(std::uint64_t response, std::uint32_t handle, unsigned extra) {
  const auto id = ids().find(handle);
  subtract(response, (id != ids().end() ? id->second.withdrawn : 0) + extra);
}

// A fault's effect on the command that is its step: the command is not
// passed on, and the event the failure ends in is queued. nullopt: the
// command goes through.
std::optional<ssize_t> fault_effect(Relay& relay, std::uint32_t cmd, const void* buffer,
                                    std::size_t length, CmFault fault, bool ethernet) {
  std::uint32_t handle = 0;
  switch (cmd) {
    case RDMA_USER_CM_CMD_RESOLVE_IP:
      if (auto c = command_of<rdma_ucm_resolve_ip>(buffer, length)) handle = c->id;
      break;
    case RDMA_USER_CM_CMD_RESOLVE_ADDR:
      if (auto c = command_of<rdma_ucm_resolve_addr>(buffer, length)) handle = c->id;
      break;
    case RDMA_USER_CM_CMD_RESOLVE_ROUTE:
      if (auto c = command_of<rdma_ucm_resolve_route>(buffer, length)) handle = c->id;
      break;
    case RDMA_USER_CM_CMD_CONNECT:
      if (auto c = command_of<rdma_ucm_connect>(buffer, length)) handle = c->id;
      break;
    default:
      return std::nullopt;
  }
  if (ids().find(handle) == ids().end()) return std::nullopt;  // not an id of this process
  const auto done = static_cast<ssize_t>(length);
  switch (fault) {
    case CmFault::kAddrError:
      enqueue(relay, made(handle, kAddrError, -ETIMEDOUT));
      return done;
    case CmFault::kRouteError:
      // RoCE resolves its route in the host: a failure is the call's.
      if (ethernet) {
        errno = ENODEV;
        return -1;
      }
      enqueue(relay, made(handle, kRouteError, -ETIMEDOUT));
      return done;
    case CmFault::kUnreachable:
      enqueue(relay, made(handle, kUnreachable, -ETIMEDOUT));
      return done;
    case CmFault::kReject: {
      const bool ud = ids()[handle].ud;
      Queued answer = made(handle, ud ? kUnreachable : kRejected,
                           ud ? 2 : 28);  // SIDR REP status 2; REJ reason 28
      const auto& data = sim::cm::kRejectPrivateData;
      if (ud) {
        std::memcpy(answer.event.param.ud.private_data, data.data(), data.size());
        answer.event.param.ud.private_data_len = static_cast<std::uint8_t>(data.size());
      } else {
        std::memcpy(answer.event.param.conn.private_data, data.data(), data.size());
        answer.event.param.conn.private_data_len = static_cast<std::uint8_t>(data.size());
      }
      enqueue(relay, answer);
      return done;
    }
    case CmFault::kNone:
      break;
  }
  return std::nullopt;
}

bool ud_port_space(const rdma_ucm_create_id& command) {
  return command.ps == RDMA_PS_UDP || command.ps == RDMA_PS_IPOIB ||
         (command.ps == RDMA_PS_IB && command.qp_type == IBV_QPT_UD);
}

// sysfs text of one attribute, by system calls (see sys_write).
std::string sysfs_text(const std::string& path) {
  const int fd =
      static_cast<int>(::syscall(SYS_openat, AT_FDCWD, path.c_str(), O_RDONLY | O_CLOEXEC));
  if (fd < 0) return {};
  char text[128] = {};
  const ssize_t n = sys_read(fd, text, sizeof text - 1);
  sys_close(fd);
  std::string out(text, n > 0 ? static_cast<std::size_t>(n) : 0);
  while (!out.empty() && (out.back() == '\n' || out.back() == ' ')) out.pop_back();
  return out;
}

}  // namespace

int open(int inner, bool simulated, int flags) {
  const int fd = epoll_create1((flags & O_CLOEXEC) != 0 ? EPOLL_CLOEXEC : 0);
  if (fd < 0) {
    const int error = errno;
    simulated ? sim::cm::close_file(inner) : sys_close(inner);
    errno = error;
    return -1;
  }
  Relay relay;
  relay.inner = inner;
  relay.simulated = simulated;
  relay.ready = eventfd(0, EFD_SEMAPHORE | EFD_NONBLOCK | EFD_CLOEXEC);
  relay.timer = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
  ::syscall(SYS_fcntl, inner, F_SETFL, sys_flags(inner) | O_NONBLOCK);
  bool ok = relay.ready >= 0 && relay.timer >= 0;
  for (int member : {relay.inner, relay.ready, relay.timer}) {
    epoll_event watch{};
    watch.events = EPOLLIN;
    watch.data.fd = member;
    ok = ok && epoll_ctl(fd, EPOLL_CTL_ADD, member, &watch) == 0;
  }
  if ((flags & O_NONBLOCK) != 0) ::syscall(SYS_fcntl, fd, F_SETFL, O_NONBLOCK);
  if (!ok) {
    const int error = errno;
    for (int member : {fd, relay.ready, relay.timer})
      if (member >= 0) sys_close(member);
    simulated ? sim::cm::close_file(inner) : sys_close(inner);
    errno = error;
    return -1;
  }
  std::lock_guard lock(g_mutex);
  relays()[fd] = relay;
  mark(fd, true);
  return fd;
}

bool is_relay(int fd) {
  if (fd < 0) return false;
  if (!DescriptorSet::fits(fd)) {
    if (!g_high_relays.load(std::memory_order_acquire)) return false;
    std::lock_guard lock(g_mutex);
    return find(fd) != nullptr;
  }
  return g_relay_fds.contains(fd);
}

ssize_t write(int fd, const void* buffer, std::size_t length, CmFault fault) {
  rdma_ucm_cmd_hdr header{};
  if (buffer == nullptr || length < sizeof header) {
    errno = EINVAL;
    return -1;
  }
  std::memcpy(&header, buffer, sizeof header);
  // A route's failure is the call's on RoCE (asked before the lock: the
  // question is a command of its own).
  bool ethernet = false;
  if (fault == CmFault::kRouteError)
    if (auto c = command_of<rdma_ucm_resolve_route>(buffer, length))
      ethernet = on_ethernet(fd, c->id);
  std::unique_lock lock(g_mutex);
  Relay* relay = find(fd);
  if (relay == nullptr) {
    errno = EBADF;
    return -1;
  }
  // A GET_EVENT never blocks here (the inner file is non-blocking).
  if (header.cmd == RDMA_USER_CM_CMD_GET_EVENT) return get_event(fd, buffer, length);
  if (fault != CmFault::kNone)
    if (auto effect = fault_effect(*relay, header.cmd, buffer, length, fault, ethernet))
      return *effect;
  const int inner = relay->inner;
  const bool simulated = relay->simulated;

  // Every other command goes to the kernel without the lock (a DESTROY_ID
  // may wait there, an iWARP CONNECT too); what it made or ended is noted
  // under it after.
  std::vector<std::uint8_t> rewritten;
  std::optional<rdma_ucm_migrate_id> migrate;
  if (header.cmd == RDMA_USER_CM_CMD_MIGRATE_ID) {
    // The command names the id's old file by its descriptor, which the
    // kernel must find to be its own: the old relay's inner file.
    migrate = command_of<rdma_ucm_migrate_id>(buffer, length);
    if (migrate) {
      const Relay* old = find(static_cast<int>(migrate->fd));
      if (old == nullptr) {
        errno = EBADF;
        return -1;
      }
      rdma_ucm_migrate_id command = *migrate;
      command.fd = static_cast<std::uint32_t>(old->inner);
      rewritten.assign(static_cast<const std::uint8_t*>(buffer),
                       static_cast<const std::uint8_t*>(buffer) + length);
      std::memcpy(rewritten.data() + sizeof header, &command, sizeof command);
    }
  }
  lock.unlock();
  const ssize_t result =
      inner_write(inner, simulated, rewritten.empty() ? buffer : rewritten.data(), length);
  if (result < 0) return result;
  lock.lock();
  switch (header.cmd) {
    case RDMA_USER_CM_CMD_CREATE_ID:
      if (auto c = command_of<rdma_ucm_create_id>(buffer, length); c && c->response != 0) {
        rdma_ucm_create_id_resp response{};
        std::memcpy(&response,
                    reinterpret_cast<const void*>(static_cast<std::uintptr_t>(c->response)),
                    sizeof response);
        ids()[response.id] = Id{c->uid, ud_port_space(*c), 0, 0, fd};
      }
      break;
    case RDMA_USER_CM_CMD_ACCEPT:
      // The passive side's ACCEPT gives the id its uid; librdmacm's own
      // ACCEPT that sends the RTU carries none (the kernel's ucma_accept
      // takes the uid only with the connection parameters).
      if (auto c = command_of<rdma_ucm_accept>(buffer, length); c && c->conn_param.valid) {
        ids()[c->id].uid = c->uid;
        ids()[c->id].file = fd;
      }
      break;
    case RDMA_USER_CM_CMD_MIGRATE_ID:
      if (migrate) {
        // Its events the relay holds follow it to the new file (those it
        // counts, a listener's requests included, as the kernel moves them
        // by their context); the kernel's count loses those it reported to
        // the relay and the program has not had, and those withdrawn:
        // rdma_migrate_id waits for as many acknowledgements.
        Relay* old = find(static_cast<int>(migrate->fd));
        Relay* now = find(fd);
        if (old != nullptr && now != nullptr && old != now) move_events_of(migrate->id, *old, *now);
        correct_count(migrate->response, migrate->id, undelivered_of(migrate->id));
        if (const auto id = ids().find(migrate->id); id != ids().end()) id->second.file = fd;
      }
      break;
    case RDMA_USER_CM_CMD_DESTROY_ID:
      if (auto c = command_of<rdma_ucm_destroy_id>(buffer, length)) {
        const std::uint32_t handle = c->id;
        correct_count(c->response, handle,
                      drop_events([&](const rdma_ucm_event_resp& e) { return of_id(e, handle); }));
        forget_id(handle);
      }
      break;
    case RDMA_USER_CM_CMD_LISTEN:
      if (auto c = command_of<rdma_ucm_listen>(buffer, length); c && !simulated)
        sim::cm::show_listening(c->id);
      break;
    case RDMA_USER_CM_CMD_JOIN_IP_MCAST:
    case RDMA_USER_CM_CMD_JOIN_MCAST: {
      // Both commands begin with the response's address, the uid and (for
      // JOIN_MCAST) the id; JOIN_IP_MCAST has the id after the address and
      // always joins as a full member.
      std::uint32_t id = 0;
      std::uint64_t response_address = 0;
      bool full_member = true;
      if (header.cmd == RDMA_USER_CM_CMD_JOIN_MCAST) {
        auto c = command_of<rdma_ucm_join_mcast>(buffer, length);
        if (!c) break;
        id = c->id;
        response_address = c->response;
        full_member = c->join_flags == RDMA_MC_JOIN_FLAG_FULLMEMBER;
      } else {
        auto c = command_of<rdma_ucm_join_ip_mcast>(buffer, length);
        if (!c) break;
        id = c->id;
        response_address = c->response;
      }
      if (response_address == 0) break;
      rdma_ucm_create_id_resp response{};
      std::memcpy(&response,
                  reinterpret_cast<const void*>(static_cast<std::uintptr_t>(response_address)),
                  sizeof response);
      joins()[response.id] = Join{id, 0, full_member, false};
      break;
    }
    case RDMA_USER_CM_CMD_LEAVE_MCAST:
      if (auto c = command_of<rdma_ucm_destroy_id>(buffer, length)) {
        // ucma_leave_multicast: the join's events not read go with it, and
        // its count is what was read (rdma_leave_multicast waits for as
        // many acknowledgements). Those the relay had from the kernel were
        // counted on the id too, which will never see them acknowledged.
        const std::uint32_t handle = c->id;
        const unsigned undelivered =
            drop_events([&](const rdma_ucm_event_resp& e) { return of_join(e, handle); });
        const auto join = joins().find(handle);
        if (join == joins().end()) break;
        subtract(c->response, join->second.withdrawn + undelivered);
        if (const auto id = ids().find(join->second.id); id != ids().end())
          id->second.withdrawn += undelivered;
        forget_join(join);
      }
      break;
    default:
      break;
  }
  return result;
}

bool withdraw_event(int fd, unsigned handle) {
  std::lock_guard lock(g_mutex);
  Relay* relay = find(fd);
  if (relay == nullptr || !relay->last || relay->last->event.id != handle) return false;
  if (relay->last->counted) withdraw(relay->last->event);
  relay->last.reset();
  return true;
}

bool delay_event(int fd, unsigned long long delay_ns) {
  std::lock_guard lock(g_mutex);
  Relay* relay = find(fd);
  if (relay == nullptr || !relay->last || relay->last->released) return false;
  Queued held = *relay->last;
  held.released = true;
  relay->held.emplace(now_ns() + delay_ns, held);
  relay->last.reset();
  arm_timer(*relay);
  return true;
}

bool event_was_delayed(int fd) {
  std::lock_guard lock(g_mutex);
  const Relay* relay = find(fd);
  return relay != nullptr && relay->last && relay->last->released;
}

namespace {

// The address QUERY of id `handle` on the inner file (a system call of its
// own; not under the lock): false when it fails.
bool query_address(int inner, bool simulated, unsigned handle, rdma_ucm_query_addr_resp& out) {
  rdma_ucm_query query{};
  query.id = handle;
  query.option = RDMA_USER_CM_QUERY_ADDR;
  return ask(inner, simulated, RDMA_USER_CM_CMD_QUERY, query, out);
}

// Id `handle` of file `fd` and every id of the process the kernel says is
// on the same device (QUERY's node GUID), and on the same port when
// `same_port`, each with its file. Empty: no such id, or on no device.
std::vector<std::pair<std::uint32_t, int>> ids_beside(int fd, unsigned handle, bool same_port) {
  // Each id's inner file, which alone may be asked about it (ucma_get_ctx
  // refuses an id of another file). The id the fault fired on is asked on
  // its own file: a listener's child is not known here before its ACCEPT.
  struct Known {
    std::uint32_t handle;
    int file;
    int inner;
    bool simulated;
  };
  std::vector<Known> known;
  int inner = -1;
  bool simulated = false;
  {
    std::lock_guard lock(g_mutex);
    const Relay* relay = find(fd);
    if (relay == nullptr) return {};
    inner = relay->inner, simulated = relay->simulated;
    for (const auto& [other, id] : ids())
      if (const Relay* file = find(id.file); file != nullptr && other != handle)
        known.push_back({other, id.file, file->inner, file->simulated});
  }
  rdma_ucm_query_addr_resp fired{};
  if (!query_address(inner, simulated, handle, fired) || fired.node_guid == 0) return {};
  std::vector<std::pair<std::uint32_t, int>> beside{{handle, fd}};
  for (const Known& id : known) {
    rdma_ucm_query_addr_resp address{};
    if (query_address(id.inner, id.simulated, id.handle, address) &&
        address.node_guid == fired.node_guid && (!same_port || address.port_num == fired.port_num))
      beside.emplace_back(id.handle, id.file);
  }
  return beside;
}

// `event` made for each of `targets`. An id the program has no cookie for yet
// (a child before its ACCEPT) hears nothing: the kernel reports no event
// for it (ucma_event_handler).
void make_for(const std::vector<std::pair<std::uint32_t, int>>& targets, ucma::Event event) {
  std::lock_guard lock(g_mutex);
  for (const auto& [handle, file] : targets)
    if (const auto id = ids().find(handle); id != ids().end() && id->second.uid != 0)
      if (Relay* relay = find(file)) enqueue(*relay, made(handle, event, 0));
}

}  // namespace

bool device_removed(int fd, unsigned handle) {
  const auto on_device = ids_beside(fd, handle, false);
  if (on_device.empty()) return false;
  make_for(on_device, kDeviceRemoval);
  return true;
}

bool address_changed(int fd, unsigned handle) {
  const auto on_port = ids_beside(fd, handle, true);
  if (on_port.empty()) return false;
  make_for(on_port, kAddrChange);
  return true;
}

bool on_ethernet(int fd, unsigned handle) {
  int inner = -1;
  bool simulated = false;
  {
    std::lock_guard lock(g_mutex);
    if (const Relay* relay = find(fd)) inner = relay->inner, simulated = relay->simulated;
  }
  if (inner < 0) return false;
  if (simulated) return sim::cm::on_ethernet(inner, handle);
  // The kernel's: the id's device and port by QUERY (the address's), the
  // link layer from sysfs.
  rdma_ucm_query_addr_resp address{};
  if (!query_address(inner, false, handle, address) || address.port_num == 0) return false;
  const std::uint64_t guid = be64toh(address.node_guid);
  char wanted[32];
  std::snprintf(wanted, sizeof wanted, "%04x:%04x:%04x:%04x", unsigned(guid >> 48 & 0xffff),
                unsigned(guid >> 32 & 0xffff), unsigned(guid >> 16 & 0xffff),
                unsigned(guid & 0xffff));
  const int dir = static_cast<int>(
      ::syscall(SYS_openat, AT_FDCWD, "/sys/class/infiniband", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (dir < 0) return false;  // the devices' names are not numbered: list them
  bool ethernet = false;
  alignas(8) char entries[4096];
  for (;;) {
    const long n = ::syscall(SYS_getdents64, dir, entries, sizeof entries);
    if (n <= 0) break;
    for (long at = 0; at < n;) {
      struct Dirent {
        std::uint64_t inode;
        std::int64_t offset;
        unsigned short length;
        unsigned char type;
        char name[1];
      };
      const auto* entry = reinterpret_cast<const Dirent*>(entries + at);
      at += entry->length;
      const std::string device = entry->name;
      if (device == "." || device == "..") continue;
      const std::string base = "/sys/class/infiniband/" + device;
      if (sysfs_text(base + "/node_guid") != wanted) continue;
      ethernet = sysfs_text(base + "/ports/" + std::to_string(address.port_num) + "/link_layer") ==
                 "Ethernet";
    }
  }
  sys_close(dir);
  return ethernet;
}

bool neighbour_changed(int fd, unsigned handle) {
  if (!on_ethernet(fd, handle)) return false;
  std::lock_guard lock(g_mutex);
  Relay* relay = find(fd);
  if (relay == nullptr || ids().find(handle) == ids().end()) return false;
  enqueue(*relay, made(handle, kUnreachable, -ETIMEDOUT));
  return true;
}

bool peer_gone(int fd, unsigned handle) {
  std::lock_guard lock(g_mutex);
  Relay* relay = find(fd);
  if (relay == nullptr || ids().find(handle) == ids().end()) return false;
  enqueue(*relay, made(handle, kDisconnected, 0));
  ++ids()[handle].disconnects_to_drop;
  return true;
}

std::vector<std::pair<unsigned, std::string>> id_states(int fd) {
  std::lock_guard lock(g_mutex);
  const Relay* relay = find(fd);
  if (relay == nullptr) return {};
  if (relay->simulated) return sim::cm::id_states(relay->inner);
  return {};
}

bool stat(int fd, struct stat* out) {
  std::lock_guard lock(g_mutex);
  const Relay* relay = find(fd);
  if (relay == nullptr || relay->simulated) return false;
  return ::syscall(SYS_fstat, relay->inner, out) == 0;
}

int close(int fd) {
  Relay relay;
  {
    std::lock_guard lock(g_mutex);
    Relay* found = find(fd);
    if (found == nullptr) {
      errno = EBADF;
      return -1;
    }
    relay = *found;
    relays().erase(fd);
    mark(fd, false);
    // Its ids are gone with it (the kernel's release of the file); their
    // handles may name other ids later.
    std::vector<std::uint32_t> gone;
    for (const auto& [handle, id] : ids())
      if (id.file == fd) gone.push_back(handle);
    for (std::uint32_t handle : gone) forget_id(handle);
  }
  relay.simulated ? sim::cm::close_file(relay.inner) : sys_close(relay.inner);
  sys_close(relay.ready);
  sys_close(relay.timer);
  return sys_close(fd);
}

}  // namespace verbfault::provider::cm_relay
