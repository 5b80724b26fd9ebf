#include "local_endpoint.h"

#include "fabric_name.h"
#include "stack_seen_by_leak_check.h"

#include <signal.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <utility>

namespace verbfault::sim::wire {

namespace {

// What an epoll event is about, in its data.u64: kind, member, id.
enum Kind : uint64_t { kListener = 1, kWake = 2, kOutgoing = 3, kIncoming = 4 };
constexpr uint64_t kIdBits = 48;

uint64_t tag(Kind kind, uint32_t member, uint64_t id) {
  return (uint64_t{kind} << 56) | (uint64_t{member} << kIdBits) | (id & ((1ull << kIdBits) - 1));
}
Kind kind_of(uint64_t tag) {
  return static_cast<Kind>(tag >> 56);
}
uint32_t member_of(uint64_t tag) {
  return static_cast<uint32_t>((tag >> kIdBits) & 0xff);
}
uint64_t id_of(uint64_t tag) {
  return tag & ((1ull << kIdBits) - 1);
}

// EPOLLRDHUP: the peer's end of stream is reported even while we do not
// read (epoll_ctl(2)); EPOLLHUP and EPOLLERR are always reported.
constexpr uint32_t kReadEvents = EPOLLIN | EPOLLRDHUP;
constexpr uint32_t kHangupEvents = EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR;

// Bytes read from one connection per epoll event before the others get a
// turn (epoll is level-triggered: the rest is reported again).
constexpr std::size_t kReadBudget = 4 * 1024 * 1024;

std::string failed(const std::string& fabric, const std::string& what) {
  return "verbfault: fabric '" + fabric + "': " + what + ": " + std::strerror(errno);
}

}  // namespace

bool LocalEndpoint::open(std::optional<uint32_t> requested, std::string& error) {
  table_ = StatusTable::open(fabric_, &fds_, error);
  if (!table_) return false;
  epoll_ = OwnedFd(epoll_create1(EPOLL_CLOEXEC), &fds_);
  if (!epoll_) {
    error = failed(fabric_, "epoll_create1");
    return false;
  }
  wake_ = OwnedFd(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK), &fds_);
  if (!wake_) {
    error = failed(fabric_, "eventfd");
    return false;
  }
  listener_ = OwnedFd(socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0), &fds_);
  if (!listener_) {
    error = failed(fabric_, "socket");
    return false;
  }
  // Holding an index is having its name bound: bind(2) is the atomic
  // test-and-take, EADDRINUSE while anyone holds it (unix(7)). A socket
  // whose bind failed is still unbound and may try another name.
  const uint32_t first = requested.value_or(0);
  const uint32_t last = requested.has_value() ? *requested + 1 : kMaxMembers;
  if (first >= kMaxMembers) {
    error = "verbfault: fabric '" + fabric_ + "': member index " + std::to_string(first) +
            " is out of range (0.." + std::to_string(kMaxMembers - 1) + ")";
    return false;
  }
  std::optional<uint32_t> bound;
  for (uint32_t index = first; index < last && !bound; ++index) {
    const MemberAddress address = member_address(fabric_, index);
    if (bind(listener_.get(), reinterpret_cast<const sockaddr*>(&address.address),
             address.length) == 0) {
      bound = index;
    } else if (errno != EADDRINUSE) {
      error = failed(fabric_, "cannot bind member index " + std::to_string(index));
      return false;
    }
  }
  if (!bound) {
    error = requested.has_value()
                ? "verbfault: fabric '" + fabric_ + "': member index " +
                      std::to_string(*requested) + " is taken by a live process"
                : "verbfault: fabric '" + fabric_ + "': all " + std::to_string(kMaxMembers) +
                      " member indexes are taken by live processes";
    return false;
  }
  member_ = *bound;
  // The slot is filled before listen(2): whoever connects finds it so.
  if (!table_->claim(member_, error)) return false;
  // A backlog for every member at once: a connect(2) to a full backlog
  // fails with EAGAIN on a non-blocking socket, and send() would say false.
  if (listen(listener_.get(), SOMAXCONN) != 0) {
    error = failed(fabric_, "listen");
    return false;
  }
  table_->mark_listening();
  epoll_event listen_event{};
  listen_event.events = EPOLLIN;
  listen_event.data.u64 = tag(kListener, 0, 0);
  epoll_event wake_event{};
  wake_event.events = EPOLLIN;
  wake_event.data.u64 = tag(kWake, 0, 0);
  if (epoll_ctl(epoll_.get(), EPOLL_CTL_ADD, listener_.get(), &listen_event) != 0 ||
      epoll_ctl(epoll_.get(), EPOLL_CTL_ADD, wake_.get(), &wake_event) != 0) {
    error = failed(fabric_, "epoll_ctl");
    return false;
  }
  return true;
}

LocalEndpoint::~LocalEndpoint() {
  if (started_) {
    const uint64_t one = 1;
    while (write(wake_.get(), &one, sizeof one) < 0 && errno == EINTR) {
    }
    pthread_join(thread_, nullptr);
  }
}

void LocalEndpoint::abandon_in_child() {
  // No lock is taken and no container read: another of the parent's
  // threads may have held one or been changing one at fork() time. The
  // parent's epoll set is shared with this child's copy of its descriptor,
  // so nothing is removed from it (EPOLL_CTL_DEL would change the parent's
  // set); closing the copies leaves the parent's sockets open.
  fds_.close_all_in_child();
  if (table_) table_->abandon_after_fork();
}

void LocalEndpoint::start(FrameHandler on_frame, PeerGoneHandler on_peer_gone) {
  if (started_) return;
  on_frame_ = std::move(on_frame);
  on_peer_gone_ = std::move(on_peer_gone);
  // pthread_create(3) called from here, not through std::thread: under the
  // thread scheduler the interposer tells the RDMA stack's threads from the
  // program's by the caller of pthread_create, and libstdc++'s would count
  // as the program's. All signals blocked in the thread: they are the
  // program's to take, on its own threads.
  sigset_t all;
  sigset_t old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  // Set before the thread exists: send_frame on the service thread reads it
  // (pthread_create orders this write before the thread's reads; set after,
  // it raced with them: ThreadSanitizer, wire_tests). Written only here, by
  // the owner, before the thread exists; the destructor reads it after.
  started_ = true;
  const int result = pthread_create(&thread_, nullptr, &LocalEndpoint::serve_thread, this);
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  if (result != 0) {
    std::fprintf(stderr, "verbfault: fabric '%s': cannot start the wire's thread: %s\n",
                 fabric_.c_str(), std::strerror(result));
    std::abort();
  }
}

namespace {

// Frames up to this size may be deferred: a request by reference, an
// atomic, a small SEND. A larger one is written at once (after what is
// deferred): its copy into the queue would cost more than the write saves.
constexpr uint64_t kMaxDeferredFrame = 4096;

}  // namespace

bool LocalEndpoint::send_frame(uint32_t member, std::span<const std::span<const uint8_t>> parts,
                               bool expects_answer) {
  if (member >= kMaxMembers) return false;
  uint64_t length = 0;
  for (const auto& part : parts) length += part.size();
  if (length > kMaxFrameBytes) return false;
  Peer& peer = peers_[member];
  std::lock_guard lock(peer.mutex);
  if (!peer.out && !connect_locked(member, peer)) return false;
  OutgoingConnection& out = *peer.out;
  const bool service_thread = started_ && pthread_equal(pthread_self(), thread_);
  if (service_thread && corked_) {
    if (!out.enqueue(parts, length)) return false;
    corked_to_ |= uint64_t{1} << member;
  } else if (!service_thread && expects_answer && peer.answers_owed > 0 &&
             length <= kMaxDeferredFrame) {
    // An answer is on its way; its arrival writes this request
    // (on_incoming). Only a request waits so: an answer (a request the
    // application's ibv_post_recv let run) is what the member waits for,
    // and two members each holding back its answer for the other's would
    // wait forever while their applications spin outside verbs (riostream).
    if (!out.enqueue(parts, length)) return false;
    deferred_to_.fetch_or(uint64_t{1} << member, std::memory_order_relaxed);
  } else {
    if (!out.send(parts, length)) return false;
    arm_for_write_locked(member, out);
  }
  if (expects_answer) ++peer.answers_owed;
  table_->count_sent(member, out.peer_incarnation());
  return true;
}

void LocalEndpoint::arm_for_write_locked(uint32_t member, OutgoingConnection& out) {
  // What the socket does not take now is written on EPOLLOUT.
  if (out.has_queued() && !out.broken() && !out.write_armed) {
    epoll_event event{};
    event.events = kReadEvents | EPOLLOUT;
    event.data.u64 = tag(kOutgoing, member, out.id());
    epoll_ctl(epoll_.get(), EPOLL_CTL_MOD, out.fd(), &event);
    out.write_armed = true;
  }
}

void LocalEndpoint::flush_deferred() {
  flush_to(deferred_to_.exchange(0, std::memory_order_relaxed));
}

void LocalEndpoint::flush_to(uint64_t members) {
  for (; members != 0; members &= members - 1) {
    const auto member = static_cast<uint32_t>(__builtin_ctzll(members));
    Peer& peer = peers_[member];
    std::lock_guard lock(peer.mutex);
    if (!peer.out) continue;
    peer.out->flush();
    arm_for_write_locked(member, *peer.out);
  }
}

void LocalEndpoint::drain(std::chrono::milliseconds limit) {
  const auto deadline = RealClock::now() + limit;
  for (Peer& peer : peers_) {
    std::lock_guard lock(peer.mutex);
    if (peer.out && peer.out->has_queued()) peer.out->drain(deadline);
  }
}

bool LocalEndpoint::connect_locked(uint32_t member, Peer& peer) {
  OwnedFd fd(socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0), &fds_);
  if (!fd) return false;
  // A non-blocking connect(2) to a UNIX stream listener completes at once,
  // or fails: ECONNREFUSED when nobody has the name bound (unix(7)).
  const MemberAddress address = member_address(fabric_, member);
  if (connect(fd.get(), reinterpret_cast<const sockaddr*>(&address.address), address.length) != 0) {
    return false;
  }
  // Who listens there: its pid from the kernel (SO_PEERCRED: the
  // listener's, as of its listen(2), unix(7)), its incarnation from the
  // table, which it filled before listening. Another pid in the table: the
  // process we reached has died since, and the index has a new holder.
  ucred peer_credentials{};
  socklen_t size = sizeof peer_credentials;
  if (getsockopt(fd.get(), SOL_SOCKET, SO_PEERCRED, &peer_credentials, &size) != 0) return false;
  const StatusTable::Holder holder = table_->holder(member);
  if (holder.pid != peer_credentials.pid) return false;
  // We still talk to an earlier holder: its PeerGoneHandler has not run yet.
  if (peer.incarnation != 0 && peer.incarnation != holder.incarnation) return false;
  const Hello hello{Hello::kMagic, member_, 0, table_->incarnation()};
  const uint64_t id = next_id_.fetch_add(1, std::memory_order_relaxed);
  auto out = std::make_unique<OutgoingConnection>(std::move(fd), id, holder.incarnation, hello);
  // Watched for the hangup from the start; for EPOLLOUT only while bytes
  // are queued (send() arms it).
  epoll_event event{};
  event.events = kReadEvents;
  event.data.u64 = tag(kOutgoing, member, id);
  if (epoll_ctl(epoll_.get(), EPOLL_CTL_ADD, out->fd(), &event) != 0) return false;
  out->watched = true;
  peer.incarnation = holder.incarnation;
  peer.out = std::move(out);
  return true;
}

void* LocalEndpoint::serve_thread(void* self) {
  const StackSeenByLeakCheck seen;
  // The harness's threads are named "vf-...": the hang watchdog tells them
  // from the program's by it (harness/interposer/hang_watchdog.cpp).
  pthread_setname_np(pthread_self(), "vf-wire");
  static_cast<LocalEndpoint*>(self)->serve();
  return nullptr;
}

void LocalEndpoint::serve() {
  epoll_event events[64];
  for (;;) {
    const int count = epoll_wait(epoll_.get(), events, 64, -1);
    if (count < 0) {
      if (errno == EINTR) continue;
      std::fprintf(stderr, "verbfault: fabric '%s': the wire's epoll_wait failed: %s\n",
                   fabric_.c_str(), std::strerror(errno));
      return;
    }
    for (int i = 0; i < count; ++i) {
      const uint64_t what = events[i].data.u64;
      switch (kind_of(what)) {
        case kWake:
          return;  // the destructor waits for us
        case kListener:
          accept_all();
          break;
        case kOutgoing:
          on_outgoing(member_of(what), id_of(what), events[i].events);
          break;
        case kIncoming:
          on_incoming(id_of(what));
          break;
      }
    }
  }
}

void LocalEndpoint::accept_all() {
  for (;;) {
    const int fd = accept4(listener_.get(), nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EINTR || errno == ECONNABORTED) continue;
      if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
        // The connection stays in the backlog and the listener is reported
        // again at once (level-triggered): a pause, not a hot loop, until
        // a descriptor is free.
        const timespec millisecond{0, 1000 * 1000};
        nanosleep(&millisecond, nullptr);
      }
      return;  // EAGAIN: the backlog is empty
    }
    const uint64_t id = next_id_.fetch_add(1, std::memory_order_relaxed);
    auto connection = std::make_unique<IncomingConnection>(OwnedFd(fd, &fds_), id);
    IncomingConnection* raw = connection.get();
    incoming_.emplace(id, std::move(connection));
    watch(raw);
    // The hello is usually there already (it left with the first frame).
    read_hello(raw);
  }
}

// Reads (the rest of) the hello; once whole, admits the connection. True
// when it is now the admitted one for its member.
bool LocalEndpoint::read_hello(IncomingConnection* connection) {
  const IncomingConnection::Status status = connection->read_hello();
  if (status != IncomingConnection::Status::kOpen) {
    retire(connection);
    return false;
  }
  if (!connection->identified()) return false;
  admit(connection);
  return peers_[connection->member()].in == connection;
}

void LocalEndpoint::admit(IncomingConnection* connection) {
  const uint32_t member = connection->member();
  Peer& peer = peers_[member];
  std::unique_lock lock(peer.mutex);
  const uint64_t current = peer.incarnation;
  if (current == 0 || current == connection->incarnation()) {
    // Two connections from one incarnation is not what a member does.
    if (peer.in != nullptr) {
      lock.unlock();
      retire(connection);
      return;
    }
    peer.incarnation = connection->incarnation();
    lock.unlock();
    peer.in = connection;
    heard_from_.fetch_or(uint64_t{1} << member, std::memory_order_release);
    watch(connection);
    return;
  }
  lock.unlock();
  if (connection->incarnation() < current) {
    // From a holder older than the one we talk to, so dead: found in the
    // backlog late. Nothing of it was handled, so nothing is gone either.
    retire(connection);
    return;
  }
  // A newer holder: the one we talk to is gone.
  if (peer.in != nullptr) {
    // Its frames first, then the news, then this one's frames.
    unwatch(connection);
    peer.parked.push_back(connection);
    return;
  }
  deliver_gone(member);
  admit(connection);
}

void LocalEndpoint::on_incoming(uint64_t id) {
  const auto found = incoming_.find(id);
  if (found == incoming_.end()) return;  // retired earlier in this batch of events
  IncomingConnection* connection = found->second.get();
  if (!connection->identified()) {
    if (!read_hello(connection)) return;
  } else if (peers_[connection->member()].in != connection) {
    return;  // parked earlier in this batch of events
  }
  corked_ = true;
  batch_frames_ = 0;
  const IncomingConnection::Status status = connection->read_frames(*this, kReadBudget);
  corked_ = false;
  if (batch_frames_ != 0) {
    // The answers owed by that member that these frames may have been:
    // what was deferred behind them leaves now, with this batch's answers.
    Peer& peer = peers_[connection->member()];
    std::lock_guard lock(peer.mutex);
    peer.answers_owed -= std::min(peer.answers_owed, batch_frames_);
    if (peer.out && peer.out->has_queued()) corked_to_ |= uint64_t{1} << connection->member();
  }
  uncork();
  if (status == IncomingConnection::Status::kClosed ||
      status == IncomingConnection::Status::kInvalid) {
    deliver_gone(connection->member());
  }
}

uint64_t LocalEndpoint::departing() const {
  uint64_t departing = 0;
  for (uint64_t heard = heard_from_.load(std::memory_order_acquire); heard != 0;
       heard &= heard - 1) {
    const auto member = static_cast<uint32_t>(__builtin_ctzll(heard));
    if (!table_->live(member)) departing |= uint64_t{1} << member;
  }
  return departing;
}

void LocalEndpoint::uncork() {
  flush_to(std::exchange(corked_to_, 0));
}

void LocalEndpoint::frame(const IncomingConnection& from, std::span<const uint8_t> bytes) {
  ++batch_frames_;
  if (on_frame_) on_frame_(from.member(), bytes);
  table_->count_handled(from.member(), from.incarnation());
}

void LocalEndpoint::on_outgoing(uint32_t member, uint64_t id, uint32_t events) {
  Peer& peer = peers_[member];
  {
    std::lock_guard lock(peer.mutex);
    if (!peer.out || peer.out->id() != id || !peer.out->watched) return;  // stale
    OutgoingConnection& out = *peer.out;
    // Nothing is ever sent back on it: readable means end of stream.
    if (events & kHangupEvents) out.mark_broken();
    if (!out.broken() && (events & EPOLLOUT)) out.flush();
    if (!out.broken()) {
      if (!out.has_queued() && out.write_armed) {
        epoll_event event{};
        event.events = kReadEvents;
        event.data.u64 = tag(kOutgoing, member, id);
        epoll_ctl(epoll_.get(), EPOLL_CTL_MOD, out.fd(), &event);
        out.write_armed = false;
      }
      return;
    }
    // Sends fail from now on, until deliver_gone() lets them connect anew.
    epoll_ctl(epoll_.get(), EPOLL_CTL_DEL, out.fd(), nullptr);
    out.watched = false;
  }
  on_hangup(member, id);
}

void LocalEndpoint::on_hangup(uint32_t member, uint64_t id) {
  // The member may have connected to us just before it ended, and its
  // connection may wait in the backlog still: admit it, so that its frames
  // are handled before the news.
  accept_all();
  Peer& peer = peers_[member];
  {
    std::lock_guard lock(peer.mutex);
    if (!peer.out || peer.out->id() != id)
      return;  // told already (accept_all admitted a newer one)
  }
  // Its end of stream will say when, after its last frame.
  if (peer.in != nullptr) return;
  deliver_gone(member);
}

void LocalEndpoint::deliver_gone(uint32_t member) {
  Peer& peer = peers_[member];
  {
    std::lock_guard lock(peer.mutex);
    closing_ = std::move(peer.out);
    peer.incarnation = 0;
    peer.answers_owed = 0;
  }
  if (closing_ && closing_->watched)
    epoll_ctl(epoll_.get(), EPOLL_CTL_DEL, closing_->fd(), nullptr);
  closing_.reset();
  if (peer.in != nullptr) {
    retire(peer.in);
    peer.in = nullptr;
  }
  if (on_peer_gone_) on_peer_gone_(member);
  heard_from_.fetch_and(~(uint64_t{1} << member), std::memory_order_release);
  // Newer holders that connected meanwhile, oldest first: the first is
  // admitted, any later one parks behind it again.
  std::vector<IncomingConnection*> parked = std::move(peer.parked);
  peer.parked.clear();
  std::sort(parked.begin(), parked.end(),
            [](const IncomingConnection* a, const IncomingConnection* b) {
              return a->incarnation() < b->incarnation();
            });
  for (IncomingConnection* connection : parked) admit(connection);
}

void LocalEndpoint::retire(IncomingConnection* connection) {
  unwatch(connection);
  incoming_.erase(connection->id());  // closes it
}

void LocalEndpoint::watch(IncomingConnection* connection) {
  if (connection->registered) return;
  epoll_event event{};
  event.events = kReadEvents;
  event.data.u64 = tag(kIncoming, 0, connection->id());
  if (epoll_ctl(epoll_.get(), EPOLL_CTL_ADD, connection->fd(), &event) == 0) {
    connection->registered = true;
  }
}

void LocalEndpoint::unwatch(IncomingConnection* connection) {
  if (!connection->registered) return;
  // Before closing: the epoll set holds the open file description, which a
  // forked child's copy of the descriptor keeps open (epoll(7), Q6).
  epoll_ctl(epoll_.get(), EPOLL_CTL_DEL, connection->fd(), nullptr);
  connection->registered = false;
}

}  // namespace verbfault::sim::wire
