// Waits on fds under the scheduler: poll(2), select(2), epoll_wait(2),
// read(2) and the socket receives, modelled when they wait on a verbs
// event fd (or on fds fed from outside, so that other threads run
// meanwhile), and the harness's own waits for an fd (thread_calls.h).
#include "thread_world.h"

#include "cm_files.h"

#include <fcntl.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <sys/socket.h>

#include <array>
#include <span>

namespace verbfault::interposer::thread_calls {

namespace {

// ---- waits on fds: poll(2), select(2), epoll_wait(2), read(2) ---------------
//
// Modelled only when the fds include a verbs event fd (a channel's, a
// context's async fd) and the call waits only to read: then the thread
// waits in the scheduler, on the virtual clock, and other threads run
// meanwhile. Any other such call (sockets, pipes, writes) passes through
// to the C library: the watchdog releases a thread blocked in it.

// Read interest only: the scheduler wakes a waiter when an fd is readable
// (or has an error or a hang-up, which poll(2) reports whatever was asked).
constexpr short kReadEvents = POLLIN | POLLPRI | POLLRDNORM | POLLRDBAND | POLLRDHUP;
constexpr std::uint32_t kEpollReadEvents = EPOLLIN | EPOLLPRI | EPOLLRDNORM | EPOLLRDBAND |
                                           EPOLLRDHUP | EPOLLERR | EPOLLHUP | EPOLLET |
                                           EPOLLONESHOT | EPOLLWAKEUP | EPOLLEXCLUSIVE;

// The fds a call waits on, as far as a Wait can hold them (kMaxWaitFds; one
// more means "too many").
struct FdList {
  int fds[scheduler::kMaxWaitFds + 1];
  std::size_t count = 0;
  bool read_only = true;
  void add(int fd) {
    for (std::size_t i = 0; i < count; ++i)
      if (fds[i] == fd) return;
    if (count <= scheduler::kMaxWaitFds) fds[count++] = fd;
  }
  bool fits() const { return count <= scheduler::kMaxWaitFds; }
};

// A relative timeout in ns (kNoDeadline: none) as a virtual deadline.
std::uint64_t deadline_after(std::uint64_t timeout_ns) {
  return timeout_ns == scheduler::kNoDeadline ? timeout_ns : sched().now_ns() + timeout_ns;
}

std::uint64_t ns_of_ms(int timeout_ms) {
  return timeout_ms < 0 ? scheduler::kNoDeadline : std::uint64_t(timeout_ms) * 1'000'000;
}

std::uint64_t ns_of_timeout(const timespec* timeout) {
  return timeout == nullptr ? scheduler::kNoDeadline : ns_of(*timeout);
}

// Whether a wait on `watched` is modelled (it only reads, at most
// kMaxWaitFds fds); fills `wait` then with `waited` (the fds whose
// readability ends it), whether one is fed from outside, and the name of
// the first verbs event fd. A wait on none of them (a socket, a pipe, an
// eventfd: an event loop's or a library's progress thread, UCX's async
// thread) is modelled too, as fed from outside: blocked in the kernel it
// would hold the baton until the watchdog released it, and every other
// thread would wait the escape time; in the scheduler the others run, and
// the scheduler waits for the fds in real time only when nobody can.
bool model(Wait& wait, const FdList& watched, const FdList& waited, const char* call) {
  if (!watched.read_only || !watched.fits() || !waited.fits() || watched.count == 0) return false;
  HarnessWorld::EventFds found = world.event_fds(watched.fds, watched.count);
  if (!found.any) found.external = true;
  wait.outside_only = !found.any;
  wait.kind = WaitKind::fd;
  for (std::size_t i = 0; i < waited.count; ++i) wait.add_fd(waited.fds[i]);
  wait.external = found.external;
  wait.call = call;
  std::snprintf(wait.fd_name, sizeof wait.fd_name, "%s", found.name);
  return true;
}

// A wait on fds by a scheduled thread. `check` is the real call with a zero
// timeout (it fills in the caller's results); `pass` the real call as the
// program made it. Nothing ready and a modelled wait: the thread waits in
// the scheduler until one of the fds is readable or the virtual deadline
// passes, then `check` says what came (0: the timeout).
template <class Check, class Pass>
int wait_on_fds(const FdList& watched, const FdList& waited, std::uint64_t timeout_ns,
                const char* call, const Check& check, const Pass& pass) {
  const int ready = check();
  if (ready != 0) return ready;  // ready, or an error (EBADF, EINTR, EINVAL)
  Wait wait;
  if (!model(wait, watched, waited, call)) return timeout_ns == 0 ? 0 : pass();
  if (timeout_ns == 0) {
    // A loop that polls with a zero timeout lets the others run.
    sched().point(/*yielding=*/true);
    return 0;
  }
  wait.deadline_ns = deadline_after(timeout_ns);
  for (;;) {
    const bool woken = sched().block(wait);
    const int result = check();
    if (result != 0 || !woken) return result;
    // Woken with nothing for the call: completions the harness holds back
    // on a channel's CQs (delayed_completion) end a wait, as before
    // ibv_get_cq_event, and become visible now. The yield moves the
    // virtual clock: a wait that keeps waking for nothing still ends at
    // its deadline.
    for (std::size_t i = 0; i < wait.fd_count; ++i)
      release_held_for_waiter(process_run(), wait.fds[i]);
    sched().point(/*yielding=*/true);
  }
}

// The fds of a poll(2) set (negative ones are ignored, as poll does).
FdList fds_of(const pollfd* fds, nfds_t n) {
  FdList list;
  for (nfds_t i = 0; i < n; ++i) {
    if (fds[i].fd < 0) continue;
    list.add(fds[i].fd);
    list.read_only &= (fds[i].events & ~kReadEvents) == 0;
  }
  return list;
}

// The fds of a select(2): those of `readfds`; any in `writefds` or
// `exceptfds` makes it a wait the scheduler does not model.
FdList fds_of(int nfds, const fd_set* readfds, const fd_set* writefds, const fd_set* exceptfds) {
  FdList list;
  if (nfds < 0 || nfds > FD_SETSIZE) {
    list.read_only = false;
    return list;
  }
  for (int fd = 0; fd < nfds; ++fd) {
    if (readfds != nullptr && FD_ISSET(fd, readfds)) list.add(fd);
    if ((writefds != nullptr && FD_ISSET(fd, writefds)) ||
        (exceptfds != nullptr && FD_ISSET(fd, exceptfds)))
      list.read_only = false;
  }
  return list;
}

// The members of the epoll set `epfd` (`watched`), from
// /proc/self/fdinfo/<epfd>, which has a "tfd: <fd> events: <mask>" line
// per member (proc(5)); the wait is on `epfd` itself, readable when a
// member is ready (epoll(7)), and on the members that are level-triggered
// (a channel with held completions ends the wait). Too many members, or an
// unreadable fdinfo: not modelled.
void epoll_members(int epfd, FdList& watched, FdList& waited) {
  waited.add(epfd);
  char path[64];
  std::snprintf(path, sizeof path, "/proc/self/fdinfo/%d", epfd);
  const int fd = ::open(path, O_RDONLY | O_CLOEXEC);
  char text[16384];  // a "tfd:" line per member, about 80 bytes each
  ssize_t size = -1;
  if (fd >= 0) {
    size = libc::real().read(fd, text, sizeof text - 1);
    ::close(fd);
  }
  if (size <= 0 || size == static_cast<ssize_t>(sizeof text - 1)) {
    watched.read_only = false;
    return;
  }
  text[size] = '\0';
  for (const char* line = std::strstr(text, "tfd:"); line != nullptr;
       line = std::strstr(line + 4, "tfd:")) {
    int member = -1;
    unsigned events = 0;
    if (std::sscanf(line, "tfd: %d events: %x", &member, &events) != 2) continue;
    watched.add(member);
    watched.read_only &= (events & ~kEpollReadEvents) == 0;
    if ((events & (EPOLLET | EPOLLONESHOT)) == 0) waited.add(member);
  }
}

// epoll_wait, epoll_pwait and epoll_pwait2 of a scheduled thread; `pass`
// is the real call as the program made it. The set's members are read from
// /proc only when nothing is ready (the check comes first).
template <class Pass>
int epoll_scheduled(int epfd, epoll_event* events, int max_events, std::uint64_t timeout_ns,
                    const sigset_t* sigmask, const char* call, const Pass& pass) {
  auto check = [&] { return libc::real().epoll_pwait(epfd, events, max_events, 0, sigmask); };
  if (const int ready = check(); ready != 0) return ready;
  FdList watched, waited;
  epoll_members(epfd, watched, waited);
  if (!waited.fits()) {
    waited = FdList{};
    waited.add(epfd);
  }
  return wait_on_fds(watched, waited, timeout_ns, call, check, pass);
}

}  // namespace

Readable wait_readable(int fd, const char* call) {
  if (!scheduler::Scheduler::manages_this_thread()) return Readable::ready;
  const int flags = fcntl(fd, F_GETFL);
  if (flags < 0 || (flags & O_NONBLOCK) != 0) return Readable::ready;  // the call says EAGAIN
  if (HarnessWorld::poll_readable(fd)) return Readable::ready;
  Wait wait;
  wait.kind = WaitKind::fd;
  wait.add_fd(fd);
  wait.call = call;
  wait.interruptible = true;
  // Named here, where the registry can be asked: a report may be made
  // under the interposer's lock.
  const HarnessWorld::EventFds found = world.event_fds(&fd, 1);
  wait.external = found.external;
  std::snprintf(wait.fd_name, sizeof wait.fd_name, "%s", found.name);
  sched().block(wait);
  if (scheduler::Scheduler::interrupted()) return Readable::interrupted;
  return HarnessWorld::poll_readable(fd) ? Readable::ready : Readable::held;
}

Readable wait_readable_outside(int fd) {
  if (scheduler::Scheduler::manages_this_thread() && scheduling()) return Readable::ready;
  std::vector<pollfd> polled{{fd, POLLIN, 0}};
  return HarnessWorld::wait_interruptibly(polled, -1) == scheduler::World::Outside::interrupted
             ? Readable::interrupted
             : Readable::ready;
}

bool wait_readable_for(int fd, std::uint64_t timeout_ns, const char* call, const char* what) {
  if (HarnessWorld::poll_readable(fd)) return true;
  if (scheduler::Scheduler::manages_this_thread() && scheduling()) {
    Wait wait;
    wait.kind = WaitKind::fd;
    wait.add_fd(fd);
    wait.call = call;
    // A real provider's fd is fed from outside; the simulated device's by
    // its own clock, unless it shares a fabric with other processes.
    wait.external = world.event_fds(&fd, 1).external;
    wait.deadline_ns = sched().now_ns() + timeout_ns;
    std::snprintf(wait.fd_name, sizeof wait.fd_name, "%s", what);
    sched().block(wait);
    return HarnessWorld::poll_readable(fd);
  }
  pollfd readable{fd, POLLIN, 0};
  const int timeout_ms = static_cast<int>(std::min<std::uint64_t>(timeout_ns / 1'000'000, 60'000));
  int result;
  while ((result = libc::real().poll(&readable, 1, timeout_ms)) < 0 && errno == EINTR) {
  }
  return result > 0;
}

namespace {

// Application threads blocked without the scheduler in accept(2) or a
// receive on a socket (outside_waiters()); relaxed: a snapshot, read by a
// thread about to wait in the device, whose own calls order nothing
// else. Not a thread in poll, epoll or select: its fds may include a
// verbs channel's, whose event would wake it into verbs calls (UCX's and
// Open MPI's progress threads wait so), and which fds an epoll set holds
// costs /proc to learn; a socket is never a verbs fd. (Counting a long
// poll or select of sockets only was tried: qperf's rc_bi_bw, whose side
// done first waits in select for the other's results, then lost its
// peer's sync after the test in 4 of 16 runs on a loaded machine.)
std::atomic<int> g_outside_waiters{0};
// Whether an OutsideWait marked the simulated device waiting because every
// application thread waited outside (provider::idle_outside); the first
// wait to end takes the mark back.
std::atomic<bool> g_marked_idle_outside{false};
// The fds those threads wait on, plus one (0: a free slot), and how many
// found no slot: the mark stands for all of them, and the device looks at
// them again after every frame (sim/fabric/fabric.h, Fabric::begin_outside), so
// with one unknown there is no mark.
constexpr std::size_t kOutsideFdSlots = 64;
std::array<std::atomic<int>, kOutsideFdSlots> g_outside_fds{};
std::atomic<int> g_outside_fds_unknown{0};

// Counts the calling thread in g_outside_waiters for its scope, when the
// call may block and comes from the program (librdmacm's own receives are
// counted apart, as the device's threads). The last application
// thread to wait so marks a process on a shared fabric waiting in its
// device, as the scheduler's outside wait does (HarnessWorld::
// wait_external): none of its threads can make a verbs call before the
// world outside acts, and a peer polling for it (UCX's UD put, whose
// target sits in recv(2) on its control socket) sees quiescence instead of
// giving up after the grace period.
class OutsideWait {
 public:
  OutsideWait(int fd, const void* caller, bool may_block)
      : counted_(may_block && !called_from_rdma_stack(caller)) {
    if (!counted_) return;
    for (std::size_t i = 0; i < kOutsideFdSlots && slot_ == kNoSlot; ++i) {
      int free = 0;
      if (g_outside_fds[i].compare_exchange_strong(free, fd + 1, std::memory_order_acq_rel))
        slot_ = i;
    }
    if (slot_ == kNoSlot) g_outside_fds_unknown.fetch_add(1, std::memory_order_acq_rel);
    g_outside_waiters.fetch_add(1, std::memory_order_relaxed);
    if (g_outside_fds_unknown.load(std::memory_order_acquire) == 0 && provider::shares_fabric() &&
        Run::every_thread_waits_outside() &&
        !g_marked_idle_outside.exchange(true, std::memory_order_acq_rel)) {
      std::array<int, kOutsideFdSlots> fds{};
      std::size_t count = 0;
      for (const std::atomic<int>& slot : g_outside_fds)
        if (const int held = slot.load(std::memory_order_acquire); held != 0)
          fds[count++] = held - 1;
      provider::idle_outside(true, std::span<const int>(fds.data(), count));
    }
  }
  ~OutsideWait() {
    if (!counted_) return;
    g_outside_waiters.fetch_sub(1, std::memory_order_relaxed);
    if (g_marked_idle_outside.exchange(false, std::memory_order_acq_rel))
      provider::idle_outside(false);
    if (slot_ == kNoSlot)
      g_outside_fds_unknown.fetch_sub(1, std::memory_order_acq_rel);
    else
      g_outside_fds[slot_].store(0, std::memory_order_release);
  }
  OutsideWait(const OutsideWait&) = delete;
  OutsideWait& operator=(const OutsideWait&) = delete;

 private:
  static constexpr std::size_t kNoSlot = kOutsideFdSlots;
  const bool counted_;
  std::size_t slot_ = kNoSlot;
};

}  // namespace

int outside_waiters() {
  return g_outside_waiters.load(std::memory_order_relaxed);
}

int poll(pollfd* fds, nfds_t n, int timeout_ms, const void* caller) {
  if (!scheduled(caller)) return libc::for_caller(caller).poll(fds, n, timeout_ms);
  const FdList watched = fds_of(fds, n);
  return wait_on_fds(
      watched, watched, ns_of_ms(timeout_ms), "poll",
      [&] { return libc::for_caller(caller).poll(fds, n, 0); },
      [&] { return libc::for_caller(caller).poll(fds, n, timeout_ms); });
}

int ppoll(pollfd* fds, nfds_t n, const timespec* timeout, const sigset_t* sigmask,
          const void* caller) {
  if (!scheduled(caller) || (timeout != nullptr && !valid(*timeout)))
    return libc::for_caller(caller).ppoll(fds, n, timeout, sigmask);
  const FdList watched = fds_of(fds, n);
  const timespec zero{0, 0};
  return wait_on_fds(
      watched, watched, ns_of_timeout(timeout), "ppoll",
      [&] { return libc::for_caller(caller).ppoll(fds, n, &zero, sigmask); },
      [&] { return libc::for_caller(caller).ppoll(fds, n, timeout, sigmask); });
}

int epoll_wait(int epfd, epoll_event* events, int max_events, int timeout_ms, const void* caller) {
  if (!scheduled(caller))
    return libc::for_caller(caller).epoll_wait(epfd, events, max_events, timeout_ms);
  return epoll_scheduled(
      epfd, events, max_events, ns_of_ms(timeout_ms), nullptr, "epoll_wait",
      [&] { return libc::for_caller(caller).epoll_wait(epfd, events, max_events, timeout_ms); });
}

int epoll_pwait(int epfd, epoll_event* events, int max_events, int timeout_ms,
                const sigset_t* sigmask, const void* caller) {
  if (!scheduled(caller))
    return libc::for_caller(caller).epoll_pwait(epfd, events, max_events, timeout_ms, sigmask);
  return epoll_scheduled(
      epfd, events, max_events, ns_of_ms(timeout_ms), sigmask, "epoll_pwait", [&] {
        return libc::for_caller(caller).epoll_pwait(epfd, events, max_events, timeout_ms, sigmask);
      });
}

int epoll_pwait2(int epfd, epoll_event* events, int max_events, const timespec* timeout,
                 const sigset_t* sigmask, const void* caller) {
  if (!scheduled(caller) || (timeout != nullptr && (timeout->tv_sec < 0 || !valid(*timeout))))
    return libc::for_caller(caller).epoll_pwait2(epfd, events, max_events, timeout, sigmask);
  return epoll_scheduled(
      epfd, events, max_events, ns_of_timeout(timeout), sigmask, "epoll_pwait2", [&] {
        return libc::for_caller(caller).epoll_pwait2(epfd, events, max_events, timeout, sigmask);
      });
}

int select(int nfds, fd_set* readfds, fd_set* writefds, fd_set* exceptfds, timeval* timeout,
           const void* caller) {
  if (!scheduled(caller) || (timeout != nullptr && (timeout->tv_sec < 0 || timeout->tv_usec < 0)))
    return libc::for_caller(caller).select(nfds, readfds, writefds, exceptfds, timeout);
  const FdList watched = fds_of(nfds, readfds, writefds, exceptfds);
  if (!watched.read_only)
    return libc::for_caller(caller).select(nfds, readfds, writefds, exceptfds, timeout);
  // Every check starts from the sets the program asked with: select(2)
  // leaves only the ready fds in them.
  fd_set asked;
  FD_ZERO(&asked);
  if (readfds != nullptr) asked = *readfds;
  const std::uint64_t timeout_ns = timeout == nullptr ? scheduler::kNoDeadline
                                                      : std::uint64_t(timeout->tv_sec) * kNs +
                                                            std::uint64_t(timeout->tv_usec) * 1000;
  return wait_on_fds(
      watched, watched, timeout_ns, "select",
      [&] {
        if (readfds != nullptr) *readfds = asked;
        timeval zero{0, 0};
        return libc::for_caller(caller).select(nfds, readfds, writefds, exceptfds, &zero);
      },
      [&] {
        if (readfds != nullptr) *readfds = asked;
        return libc::for_caller(caller).select(nfds, readfds, writefds, exceptfds, timeout);
      });
}

int pselect(int nfds, fd_set* readfds, fd_set* writefds, fd_set* exceptfds, const timespec* timeout,
            const sigset_t* sigmask, const void* caller) {
  if (!scheduled(caller) || (timeout != nullptr && (timeout->tv_sec < 0 || !valid(*timeout))))
    return libc::for_caller(caller).pselect(nfds, readfds, writefds, exceptfds, timeout, sigmask);
  const FdList watched = fds_of(nfds, readfds, writefds, exceptfds);
  if (!watched.read_only)
    return libc::for_caller(caller).pselect(nfds, readfds, writefds, exceptfds, timeout, sigmask);
  fd_set asked;
  FD_ZERO(&asked);
  if (readfds != nullptr) asked = *readfds;
  const timespec zero{0, 0};
  return wait_on_fds(
      watched, watched, ns_of_timeout(timeout), "pselect",
      [&] {
        if (readfds != nullptr) *readfds = asked;
        return libc::for_caller(caller).pselect(nfds, readfds, writefds, exceptfds, &zero, sigmask);
      },
      [&] {
        if (readfds != nullptr) *readfds = asked;
        return libc::for_caller(caller).pselect(nfds, readfds, writefds, exceptfds, timeout,
                                                sigmask);
      });
}

namespace {

bool blocking(int fd) {
  const int flags = fcntl(fd, F_GETFL);
  return flags >= 0 && (flags & O_NONBLOCK) == 0;
}

// A scheduled thread's blocking read-like call on a fd that is not a verbs
// event fd (a socket, a pipe, a listening socket): it waits as poll(2) for
// the fd to be readable (modelled, fed from outside: the others run, and
// the process counts as waiting in its device while all wait), then the
// call itself returns at once, or blocks as the kernel's would when
// another thread took what came first. False: poll failed (errno set).
bool await_readable(int fd, const void* caller) {
  pollfd one{fd, POLLIN, 0};
  return poll(&one, 1, -1, caller) >= 0;
}

// accept(2) and the receives on a socket: a scheduled thread waits for the
// fd to be readable (await_readable) when the call would block; without
// the scheduler the thread counts as waiting outside (OutsideWait) for
// the call. `receive` is the C library's call.
template <class Receive>
auto receive_on_socket(int fd, bool may_block, const void* caller, const Receive& receive) {
  if (scheduled(caller)) {
    if (may_block && !HarnessWorld::poll_readable(fd) && blocking(fd) &&
        !await_readable(fd, caller))
      return decltype(receive())(-1);
    return receive();
  }
  const OutsideWait counted(fd, caller, may_block);
  return receive();
}

}  // namespace

ssize_t read(int fd, void* buffer, size_t count, const void* caller) {
  if (cm_files::refuses_read(fd)) return -1;
  // Only a read that would block is looked at: a non-blocking fd, or one
  // with something to read, is the C library's at once. The registry is
  // asked last, and must be: the harness itself reads files through
  // libstdc++ (a caller outside the RDMA stack) while it holds the
  // interposer's lock (Run::replay_line), and a file is always readable.
  // The poll costs a system call (a 1-byte read of /dev/zero by a
  // scheduled thread: 615 ns, 240 ns without the scheduler).
  if (scheduled(caller) && !HarnessWorld::poll_readable(fd) && blocking(fd)) {
    if (world.event_fds(&fd, 1).any) {
      Readable readable;
      while ((readable = wait_readable(fd, "read")) == Readable::held)
        release_held_for_waiter(process_run(), fd);
      if (readable == Readable::interrupted) {
        errno = EINTR;
        return -1;
      }
    } else if (!await_readable(fd, caller)) {
      return -1;
    }
  }
  return libc::for_caller(caller).read(fd, buffer, count);
}

int accept4(int fd, sockaddr* address, socklen_t* length, int flags, const void* caller) {
  // A connection to take is a readable listening socket (accept(2)).
  return receive_on_socket(fd, true, caller, [&] {
    return libc::for_caller(caller).accept4(fd, address, length, flags);
  });
}

ssize_t recvfrom(int fd, void* buffer, size_t length, int flags, sockaddr* address,
                 socklen_t* address_length, const void* caller) {
  return receive_on_socket(fd, (flags & MSG_DONTWAIT) == 0, caller, [&] {
    return libc::for_caller(caller).recvfrom(fd, buffer, length, flags, address, address_length);
  });
}

ssize_t recvmsg(int fd, msghdr* message, int flags, const void* caller) {
  return receive_on_socket(fd, (flags & MSG_DONTWAIT) == 0, caller,
                           [&] { return libc::for_caller(caller).recvmsg(fd, message, flags); });
}

}  // namespace verbfault::interposer::thread_calls
