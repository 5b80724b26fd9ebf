// The synchronization calls the thread scheduler models besides mutexes and
// condition variables (issue 11), each in a small threaded verbs program:
//
//   sync_calls rwlock     two writers post RDMA WRITEs and reap them under a
//                         write lock; two readers query the QP and check the
//                         counts under a read lock (rdlock and tryrdlock)
//   sync_calls semaphore  a producer and two consumers around a bounded
//                         buffer of two semaphores (sem_wait/sem_post)
//   sync_calls poll          an event-loop thread waits for completion
//   sync_calls epoll         events with poll(2), epoll_wait(2),
//   sync_calls epoll_pwait2  epoll_pwait2 or select(2) on the channel's
//   sync_calls select        non-blocking fd, then ibv_get_cq_event; a
//                            worker posts, sleeping between posts
//   sync_calls timed      timed waits that end on the virtual clock:
//                         pthread_mutex_timedlock, sem_timedwait, rwlocks,
//                         and the EINVAL cases, as glibc has them
//   sync_calls spin       two threads post and reap under a pthread spin
//                         lock (UCX's kind), polling while they hold it
//   sync_calls pipe       a worker posts, reaps and writes a byte to a pipe
//                         per request; an event loop waits for the pipe in
//                         poll(2) (no verbs fd among its fds)
//   sync_calls socket     the same over a UNIX stream socket: the event loop
//                         waits in accept(2) for the worker's connection,
//                         then in recv(2), read(2) and recvmsg(2) for a
//                         byte per request (blocking calls on a socket,
//                         which the scheduler models as poll(2) waits)
//   sync_calls alarm      the main thread blocks in ibv_get_cq_event while
//                         a real-time SIGALRM comes every 20 ms (its handler
//                         without SA_RESTART): the call fails with EINTR,
//                         as a read(2) of the fd would; then a worker posts
//                         and the next call returns its event
//   sync_calls alarm_restart  the same with SA_RESTART, the handler writing
//                         the pipe the worker waits on: the blocked call
//                         goes on to the worker's event
//   sync_calls deadlock   two threads take two rwlocks in opposite order
//   sync_calls forever    the event loop polls with no timeout, and nobody
//                         posts
//   sync_calls read       a thread reads the context's (blocking) async fd,
//                         and no async event ever comes
//
// Under `verbfault run --seed S` every mode but the last three ends with
// status 0 and "sync_calls <mode>: OK", its trace a function of the seed
// (test_verbfault_run.cpp); the last three end with the scheduler's
// deadlock report (status 122).
#include "verbfault_testing/rc_connect.h"

#include <fcntl.h>
#include <infiniband/verbs.h>
#include <poll.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <sys/time.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>

namespace {

constexpr int kWrites = 16;  // RDMA WRITEs a mode posts in all
constexpr int kSlot = 64;

struct Verbs {
  ibv_context* context = nullptr;
  ibv_pd* pd = nullptr;
  ibv_comp_channel* channel = nullptr;
  ibv_cq* cq = nullptr;
  ibv_qp* a = nullptr;
  ibv_qp* b = nullptr;
  ibv_mr* mr = nullptr;
  char out[kWrites][kSlot] = {};
  char in[kWrites][kSlot] = {};
};

Verbs verbs;  // the MR covers it

bool open_verbs(ibv_device** list) {
  Verbs& v = verbs;
  v.context = ibv_open_device(list[0]);
  if (v.context == nullptr) return false;
  v.pd = ibv_alloc_pd(v.context);
  v.channel = ibv_create_comp_channel(v.context);
  if (v.pd == nullptr || v.channel == nullptr) return false;
  v.cq = ibv_create_cq(v.context, 2 * kWrites, nullptr, v.channel, 0);
  v.mr = ibv_reg_mr(v.pd, &v, sizeof v, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
  if (v.cq == nullptr || v.mr == nullptr) return false;
  ibv_qp_init_attr attr{};
  attr.qp_type = IBV_QPT_RC;
  attr.cap.max_send_wr = kWrites;
  attr.cap.max_recv_wr = 1;
  attr.cap.max_send_sge = attr.cap.max_recv_sge = 1;
  attr.send_cq = attr.recv_cq = v.cq;
  v.a = ibv_create_qp(v.pd, &attr);
  v.b = ibv_create_qp(v.pd, &attr);
  if (v.a == nullptr || v.b == nullptr) return false;
  ibv_port_attr port{};
  if (ibv_query_port(v.context, 1, &port) != 0) return false;
  verbfault::testing::RcConnectOptions to_b;
  to_b.dest_qp_num = v.b->qp_num;
  to_b.dlid = port.lid;
  verbfault::testing::RcConnectOptions to_a = to_b;
  to_a.dest_qp_num = v.a->qp_num;
  return verbfault::testing::rc_connect(v.a, to_b) == 0 &&
         verbfault::testing::rc_connect(v.b, to_a) == 0;
}

void close_verbs() {
  Verbs& v = verbs;
  ibv_destroy_qp(v.a);
  ibv_destroy_qp(v.b);
  ibv_destroy_cq(v.cq);
  ibv_destroy_comp_channel(v.channel);
  ibv_dereg_mr(v.mr);
  ibv_dealloc_pd(v.pd);
  ibv_close_device(v.context);
}

// A signaled RDMA WRITE of request `r` from QP a into b's memory.
bool post_write(int r) {
  std::snprintf(verbs.out[r], kSlot, "request %d", r);
  ibv_sge sge{reinterpret_cast<uint64_t>(verbs.out[r]), kSlot, verbs.mr->lkey};
  ibv_send_wr wr{};
  wr.wr_id = static_cast<uint64_t>(r);
  wr.sg_list = &sge;
  wr.num_sge = 1;
  wr.opcode = IBV_WR_RDMA_WRITE;
  wr.send_flags = IBV_SEND_SIGNALED;
  wr.wr.rdma.remote_addr = reinterpret_cast<uint64_t>(verbs.in[r]);
  wr.wr.rdma.rkey = verbs.mr->rkey;
  ibv_send_wr* bad = nullptr;
  return ibv_post_send(verbs.a, &wr, &bad) == 0;
}

// Polls one completion (busy: an empty poll lets the other threads run).
bool reap_one() {
  ibv_wc wc{};
  int n;
  while ((n = ibv_poll_cq(verbs.cq, 1, &wc)) == 0) {
  }
  return n == 1 && wc.status == IBV_WC_SUCCESS;
}

bool landed() {
  for (int r = 0; r < kWrites; ++r)
    if (std::strcmp(verbs.in[r], verbs.out[r]) != 0) return false;
  return true;
}

bool run_threads(int n, void* (*body)(void*)) {
  pthread_t threads[8];
  long ids[8];
  for (int i = 0; i < n; ++i) {
    ids[i] = i;
    if (pthread_create(&threads[i], nullptr, body, &ids[i]) != 0) return false;
  }
  for (int i = 0; i < n; ++i) pthread_join(threads[i], nullptr);
  return true;
}

// ---- rwlock -----------------------------------------------------------------

pthread_rwlock_t table_lock = PTHREAD_RWLOCK_INITIALIZER;
int posted = 0;     // under table_lock
int completed = 0;  // under table_lock
int writers_done = 0;
bool failed = false;

void* rwlock_writer(void* raw) {
  // Each writer its own requests: the trace shows whose write came when.
  const int writer = static_cast<int>(*static_cast<long*>(raw));
  for (int i = 0; i < kWrites / 2; ++i) {
    pthread_rwlock_wrlock(&table_lock);
    ++posted;
    if (!post_write(writer * kWrites / 2 + i) || !reap_one()) failed = true;
    ++completed;
    pthread_rwlock_unlock(&table_lock);
  }
  pthread_rwlock_wrlock(&table_lock);
  ++writers_done;
  pthread_rwlock_unlock(&table_lock);
  return nullptr;
}

void* rwlock_reader(void* raw) {
  const bool trying = *static_cast<long*>(raw) == 3;
  for (;;) {
    if (trying) {
      while (pthread_rwlock_tryrdlock(&table_lock) == EBUSY) {
      }
    } else {
      pthread_rwlock_rdlock(&table_lock);
    }
    // A writer reaps before it unlocks: under the read lock the counts agree.
    ibv_qp_attr attr{};
    ibv_qp_init_attr init{};
    if (ibv_query_qp(verbs.a, &attr, IBV_QP_STATE, &init) != 0 || attr.qp_state != IBV_QPS_RTS ||
        posted != completed)
      failed = true;
    const bool done = writers_done == 2;
    pthread_rwlock_unlock(&table_lock);
    if (done) return nullptr;
    // A reader that took the lock again at once would run on (PCT runs the
    // higher priority until it waits) until the scheduler's fairness bound
    // moved it below the writers, 10000 points later: the pause keeps the
    // run short.
    usleep(50);
  }
}

void* rwlock_role(void* raw) {
  return *static_cast<long*>(raw) < 2 ? rwlock_writer(raw) : rwlock_reader(raw);
}

bool rwlock_mode() {
  return run_threads(4, rwlock_role) && !failed && completed == kWrites && landed();
}

// ---- semaphore --------------------------------------------------------------

sem_t slots;  // free places in the buffer
sem_t items;  // posted writes not yet reaped
pthread_mutex_t cq_mutex = PTHREAD_MUTEX_INITIALIZER;
int reaped = 0;  // under cq_mutex

void* sem_role(void* raw) {
  if (*static_cast<long*>(raw) == 0) {  // the producer
    for (int r = 0; r < kWrites; ++r) {
      sem_wait(&slots);
      if (!post_write(r)) failed = true;
      sem_post(&items);
    }
    return nullptr;
  }
  for (int i = 0; i < kWrites / 2; ++i) {  // a consumer
    sem_wait(&items);
    pthread_mutex_lock(&cq_mutex);
    if (!reap_one()) failed = true;
    ++reaped;
    pthread_mutex_unlock(&cq_mutex);
    sem_post(&slots);
  }
  return nullptr;
}

bool semaphore_mode() {
  if (sem_init(&slots, 0, 2) != 0 || sem_init(&items, 0, 0) != 0) return false;
  const bool ran = run_threads(3, sem_role);
  sem_destroy(&slots);
  sem_destroy(&items);
  return ran && !failed && reaped == kWrites && landed();
}

// ---- poll, epoll, select ----------------------------------------------------

enum class Waiter { poll, epoll, epoll_pwait2, select, poll_forever };
Waiter waiter = Waiter::poll;
int timeouts = 0;

// Waits until the channel's fd is readable, as an event loop does: 1 when
// it is, 0 on the timeout (1 s), -1 on an error.
int wait_for_channel(int epoll_fd) {
  const int fd = verbs.channel->fd;
  switch (waiter) {
    case Waiter::poll: {
      // nfds the compiler cannot bound: built with _FORTIFY_SOURCE
      // (sync_calls_fortified) this calls __poll_chk.
      static volatile nfds_t one = 1;
      pollfd p{fd, POLLIN, 0};
      return poll(&p, one, 1000);
    }
    case Waiter::poll_forever: {
      pollfd p{fd, POLLIN, 0};
      return poll(&p, 1, -1);
    }
    case Waiter::epoll: {
      epoll_event event{};
      return epoll_wait(epoll_fd, &event, 1, 1000);
    }
    case Waiter::epoll_pwait2: {
      epoll_event event{};
      const timespec second{1, 0};
      return epoll_pwait2(epoll_fd, &event, 1, &second, nullptr);
    }
    case Waiter::select: {
      fd_set readable;
      FD_ZERO(&readable);
      FD_SET(fd, &readable);
      timeval timeout{1, 0};
      const int n = select(fd + 1, &readable, nullptr, nullptr, &timeout);
      return n > 0 && !FD_ISSET(fd, &readable) ? -1 : n;
    }
  }
  return -1;
}

// The event loop: arm, drain, wait for the fd, take the event (the
// standard order: an event between the drain and the wait is not lost).
void* event_loop(void*) {
  // As event loops do: a non-blocking channel, so that ibv_get_cq_event
  // never blocks after the wait said readable (ibv_get_cq_event(3)).
  const int flags = fcntl(verbs.channel->fd, F_GETFL);
  if (fcntl(verbs.channel->fd, F_SETFL, flags | O_NONBLOCK) != 0) failed = true;
  int epoll_fd = -1;
  if (waiter == Waiter::epoll || waiter == Waiter::epoll_pwait2) {
    epoll_fd = epoll_create1(EPOLL_CLOEXEC);
    epoll_event event{};
    event.events = EPOLLIN;
    event.data.fd = verbs.channel->fd;
    if (epoll_fd < 0 || epoll_ctl(epoll_fd, EPOLL_CTL_ADD, verbs.channel->fd, &event) != 0)
      failed = true;
  }
  int got = 0;
  while (got < kWrites && !failed) {
    if (ibv_req_notify_cq(verbs.cq, 0) != 0) failed = true;
    ibv_wc wc[4];
    int n;
    while ((n = ibv_poll_cq(verbs.cq, 4, wc)) > 0)
      for (int i = 0; i < n; ++i) {
        if (wc[i].status != IBV_WC_SUCCESS) failed = true;
        ++got;
      }
    if (n < 0) failed = true;
    if (got == kWrites) break;
    const int ready = wait_for_channel(epoll_fd);
    if (ready < 0) failed = true;
    if (ready == 0) ++timeouts;
    if (ready <= 0) continue;
    ibv_cq* cq = nullptr;
    void* context = nullptr;
    if (ibv_get_cq_event(verbs.channel, &cq, &context) == 0)
      ibv_ack_cq_events(cq, 1);
    else if (errno != EAGAIN)
      failed = true;
  }
  if (epoll_fd >= 0) close(epoll_fd);
  return nullptr;
}

void* poster(void*) {
  for (int r = 0; r < kWrites; ++r) {
    usleep(200);  // virtual time: the event loop waits meanwhile
    if (!post_write(r)) failed = true;
  }
  return nullptr;
}

void* event_role(void* raw) {
  if (*static_cast<long*>(raw) == 0) return event_loop(raw);
  return waiter == Waiter::poll_forever ? nullptr : poster(raw);
}

bool event_mode(Waiter how) {
  waiter = how;
  const bool ok = run_threads(2, event_role) && !failed && landed();
  std::printf("sync_calls: %d waits timed out\n", timeouts);
  return ok;
}

// ---- timed ------------------------------------------------------------------

pthread_mutex_t held = PTHREAD_MUTEX_INITIALIZER;
sem_t holding;  // the holder has `held`
sem_t never;    // nobody posts it

std::uint64_t now_ns(clockid_t clock) {
  timespec t{};
  clock_gettime(clock, &t);
  return static_cast<std::uint64_t>(t.tv_sec) * 1'000'000'000 + t.tv_nsec;
}

timespec at(clockid_t clock, std::uint64_t after_ns) {
  const std::uint64_t ns = now_ns(clock) + after_ns;
  return {static_cast<time_t>(ns / 1'000'000'000), static_cast<long>(ns % 1'000'000'000)};
}

bool check(bool condition, const char* what) {
  if (!condition) std::fprintf(stderr, "sync_calls timed: %s\n", what);
  return condition;
}

void* timed_role(void* raw) {
  if (*static_cast<long*>(raw) == 0) {  // holds `held` and `table_lock` for 10 ms
    pthread_rwlock_wrlock(&table_lock);
    pthread_mutex_lock(&held);
    sem_post(&holding);
    usleep(10'000);
    if (!post_write(0) || !reap_one()) failed = true;
    pthread_mutex_unlock(&held);
    pthread_rwlock_unlock(&table_lock);
    return nullptr;
  }
  sem_wait(&holding);
  bool ok = true;
  // A read lock against the writer: ETIMEDOUT after 1 ms.
  timespec soon = at(CLOCK_REALTIME, 1'000'000);
  ok &= check(pthread_rwlock_timedrdlock(&table_lock, &soon) == ETIMEDOUT, "timedrdlock");
  soon = at(CLOCK_MONOTONIC, 1'000'000);
  ok &= check(pthread_rwlock_clockwrlock(&table_lock, CLOCK_MONOTONIC, &soon) == ETIMEDOUT,
              "clockwrlock");
  // 2 ms: the holder keeps it for 10, so the wait ends on the virtual clock.
  std::uint64_t start = now_ns(CLOCK_REALTIME);
  timespec deadline = at(CLOCK_REALTIME, 2'000'000);
  ok &= check(pthread_mutex_timedlock(&held, &deadline) == ETIMEDOUT, "timedlock: ETIMEDOUT");
  const std::uint64_t mutex_waited = now_ns(CLOCK_REALTIME) - start;
  ok &= check(mutex_waited >= 2'000'000 && mutex_waited < 10'000'000, "timedlock: 2 ms");
  // 50 ms: the holder lets go at 10.
  deadline = at(CLOCK_REALTIME, 50'000'000);
  ok &= check(pthread_mutex_timedlock(&held, &deadline) == 0, "timedlock: taken");
  pthread_mutex_unlock(&held);
  // pthread_mutex_clocklock on the monotonic clock: free, taken at once.
  deadline = at(CLOCK_MONOTONIC, 1'000'000);
  ok &= check(pthread_mutex_clocklock(&held, CLOCK_MONOTONIC, &deadline) == 0, "clocklock");
  pthread_mutex_unlock(&held);
  // A semaphore nobody posts: -1 and ETIMEDOUT after 5 ms.
  start = now_ns(CLOCK_REALTIME);
  deadline = at(CLOCK_REALTIME, 5'000'000);
  ok &= check(sem_timedwait(&never, &deadline) == -1 && errno == ETIMEDOUT, "sem_timedwait");
  const std::uint64_t sem_waited = now_ns(CLOCK_REALTIME) - start;
  ok &= check(sem_waited >= 5'000'000 && sem_waited < 6'000'000, "sem_timedwait: 5 ms");
  deadline = at(CLOCK_MONOTONIC, 1'000'000);
  ok &= check(sem_clockwait(&never, CLOCK_MONOTONIC, &deadline) == -1 && errno == ETIMEDOUT,
              "sem_clockwait");
  // EINVAL: tv_nsec out of range, a clock the clock* calls do not take.
  // glibc checks a semaphore's or rwlock's timeout even when the call need
  // not wait (POSIX allows either), a mutex's only when it must wait
  // (pthread_mutex_timedlock(3p)): the same with the harness as without.
  timespec bad{deadline.tv_sec, 1'000'000'000};
  ok &= check(sem_timedwait(&never, &bad) == -1 && errno == EINVAL, "sem_timedwait: EINVAL");
  sem_post(&never);
  ok &= check(sem_timedwait(&never, &bad) == -1 && errno == EINVAL, "sem_timedwait: EINVAL now");
  ok &= check(sem_trywait(&never) == 0, "sem_trywait");
  ok &= check(pthread_rwlock_timedrdlock(&table_lock, &bad) == EINVAL, "timedrdlock: EINVAL");
  ok &= check(pthread_mutex_timedlock(&held, &bad) == 0, "timedlock: free, not checked");
  pthread_mutex_unlock(&held);
  ok &= check(pthread_mutex_clocklock(&held, CLOCK_PROCESS_CPUTIME_ID, &deadline) == EINVAL,
              "clocklock: EINVAL");
  pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
  pthread_mutex_lock(&held);
  ok &= check(pthread_cond_clockwait(&cond, &held, CLOCK_THREAD_CPUTIME_ID, &deadline) == EINVAL,
              "cond_clockwait: EINVAL");
  deadline = at(CLOCK_MONOTONIC, 3'000'000);
  ok &= check(pthread_cond_clockwait(&cond, &held, CLOCK_MONOTONIC, &deadline) == ETIMEDOUT,
              "cond_clockwait: ETIMEDOUT");
  pthread_mutex_unlock(&held);
  pthread_rwlock_wrlock(&table_lock);
  deadline = at(CLOCK_REALTIME, 1'000'000);
  ok &= check(pthread_rwlock_timedwrlock(&table_lock, &deadline) == EDEADLK, "rwlock: EDEADLK");
  pthread_rwlock_unlock(&table_lock);
  std::printf("sync_calls: timedlock waited %llu ns, sem_timedwait %llu ns\n",
              static_cast<unsigned long long>(mutex_waited),
              static_cast<unsigned long long>(sem_waited));
  if (!ok) failed = true;
  return nullptr;
}

bool timed_mode() {
  if (sem_init(&holding, 0, 0) != 0 || sem_init(&never, 0, 0) != 0) return false;
  return run_threads(2, timed_role) && !failed;
}

// ---- spin -------------------------------------------------------------------

pthread_spinlock_t spin;
int spun = 0;  // under spin

// Each holds the spin lock across its polls (scheduling points): the other
// spins on it meanwhile, at scheduling points of its own.
void* spin_role(void* raw) {
  const int half = static_cast<int>(*static_cast<long*>(raw));
  for (int r = half; r < kWrites; r += 2) {
    pthread_spin_lock(&spin);
    const bool ok = post_write(r) && reap_one();
    ++spun;
    pthread_spin_unlock(&spin);
    if (!ok) return &failed;
  }
  return nullptr;
}

bool spin_mode() {
  if (pthread_spin_init(&spin, PTHREAD_PROCESS_PRIVATE) != 0) return false;
  return run_threads(2, spin_role) && !failed && spun == kWrites && landed();
}

// ---- pipe -------------------------------------------------------------------

int pipe_fds[2];

void* pipe_worker(void*) {
  for (int r = 0; r < kWrites; ++r) {
    if (!post_write(r) || !reap_one() || write(pipe_fds[1], "x", 1) != 1) return &failed;
  }
  return nullptr;
}

// Waits for a byte per request in poll(2) with no timeout: a wait on a
// pipe alone, which the scheduler models as fed from outside the process.
void* pipe_loop(void*) {
  for (int r = 0; r < kWrites; ++r) {
    pollfd p{pipe_fds[0], POLLIN, 0};
    char byte;
    if (poll(&p, 1, -1) != 1 || read(pipe_fds[0], &byte, 1) != 1) return &failed;
  }
  return nullptr;
}

void* pipe_role(void* raw) {
  return *static_cast<long*>(raw) == 0 ? pipe_loop(nullptr) : pipe_worker(nullptr);
}

bool pipe_mode() {
  if (pipe(pipe_fds) != 0) return false;
  const bool ok = run_threads(2, pipe_role) && !failed && landed();
  close(pipe_fds[0]);
  close(pipe_fds[1]);
  return ok;
}

// ---- socket -----------------------------------------------------------------

int listener = -1;
sockaddr_un listener_address{};

void* socket_worker(void*) {
  const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0 || connect(fd, reinterpret_cast<const sockaddr*>(&listener_address),
                        sizeof listener_address) != 0)
    return &failed;
  for (int r = 0; r < kWrites; ++r) {
    if (!post_write(r) || !reap_one() || send(fd, "x", 1, 0) != 1) return &failed;
  }
  close(fd);
  return nullptr;
}

// Blocks in accept(2), then in recv(2), read(2) and recvmsg(2) in turn:
// each a wait for a socket alone, fed from outside the process.
void* socket_loop(void*) {
  const int fd = accept(listener, nullptr, nullptr);
  if (fd < 0) return &failed;
  for (int r = 0; r < kWrites; ++r) {
    char byte = 0;
    ssize_t got = 0;
    if (r % 3 == 0) {
      got = recv(fd, &byte, 1, 0);
    } else if (r % 3 == 1) {
      got = read(fd, &byte, 1);
    } else {
      iovec part{&byte, 1};
      msghdr message{};
      message.msg_iov = &part;
      message.msg_iovlen = 1;
      got = recvmsg(fd, &message, 0);
    }
    if (got != 1 || byte != 'x') return &failed;
  }
  close(fd);
  return nullptr;
}

void* socket_role(void* raw) {
  return *static_cast<long*>(raw) == 0 ? socket_loop(nullptr) : socket_worker(nullptr);
}

bool socket_mode() {
  // An abstract name (unix(7)): nothing to clean up; the pid keeps
  // parallel runs apart.
  listener_address.sun_family = AF_UNIX;
  std::snprintf(listener_address.sun_path + 1, sizeof listener_address.sun_path - 1,
                "sync_calls-%d", static_cast<int>(getpid()));
  listener = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (listener < 0 ||
      bind(listener, reinterpret_cast<const sockaddr*>(&listener_address),
           sizeof listener_address) != 0 ||
      listen(listener, 1) != 0)
    return false;
  const bool ok = run_threads(2, socket_role) && !failed && landed();
  close(listener);
  return ok;
}

// ---- alarm ------------------------------------------------------------------

int alarm_pipe[2];

bool alarm_wakes_worker = false;  // set before the timer starts

// Without SA_RESTART the worker posts once the call was interrupted.
void on_alarm_go() {
  const char byte = 'x';
  (void)!write(alarm_pipe[1], &byte, 1);
}

void on_alarm(int) {
  const char byte = 'x';
  if (alarm_wakes_worker) (void)!write(alarm_pipe[1], &byte, 1);
}

// Waits for the alarm's byte (SIGALRM blocked here: it is the main
// thread's), then posts a write whose completion raises the event.
void* alarm_worker(void*) {
  sigset_t alarm_only;
  sigemptyset(&alarm_only);
  sigaddset(&alarm_only, SIGALRM);
  pthread_sigmask(SIG_BLOCK, &alarm_only, nullptr);
  pollfd p{alarm_pipe[0], POLLIN, 0};
  char byte;
  if (poll(&p, 1, -1) != 1 || read(alarm_pipe[0], &byte, 1) != 1) return &failed;
  return post_write(0) ? nullptr : &failed;
}

bool alarm_mode(bool restart) {
  if (pipe(alarm_pipe) != 0) return false;
  struct sigaction action {};
  action.sa_handler = on_alarm;
  action.sa_flags = restart ? SA_RESTART : 0;
  sigemptyset(&action.sa_mask);
  if (sigaction(SIGALRM, &action, nullptr) != 0 || ibv_req_notify_cq(verbs.cq, 0) != 0)
    return false;
  alarm_wakes_worker = restart;
  pthread_t worker;
  if (pthread_create(&worker, nullptr, alarm_worker, nullptr) != 0) return false;
  // Every 20 ms: one that comes before the call blocks interrupts nothing,
  // as before a real read(2) (a loaded machine).
  itimerval every_20ms{};
  every_20ms.it_value.tv_usec = 20'000;
  every_20ms.it_interval.tv_usec = 20'000;
  setitimer(ITIMER_REAL, &every_20ms, nullptr);
  ibv_cq* cq = nullptr;
  void* context = nullptr;
  int first = ibv_get_cq_event(verbs.channel, &cq, &context);
  const int first_errno = errno;
  const itimerval off{};
  setitimer(ITIMER_REAL, &off, nullptr);
  if (!restart) on_alarm_go();
  std::printf("sync_calls: the first ibv_get_cq_event returned %d (%s)\n", first,
              first == 0 ? "an event" : std::strerror(first_errno));
  int got = first;
  if (first != 0) got = ibv_get_cq_event(verbs.channel, &cq, &context);  // the worker's event
  if (got == 0) ibv_ack_cq_events(cq, 1);
  pthread_join(worker, nullptr);
  const bool expected = restart ? first == 0 : (first == -1 && first_errno == EINTR);
  return expected && got == 0 && reap_one() && !failed;
}

// ---- deadlock ---------------------------------------------------------------

pthread_rwlock_t first = PTHREAD_RWLOCK_INITIALIZER;
pthread_rwlock_t second = PTHREAD_RWLOCK_INITIALIZER;
sem_t has_first, has_second;

void* deadlock_role(void* raw) {
  const bool a = *static_cast<long*>(raw) == 0;
  pthread_rwlock_wrlock(a ? &first : &second);
  (void)post_write(a ? 0 : 1);
  sem_post(a ? &has_first : &has_second);
  // Each waits until the other holds its lock: every seed deadlocks.
  sem_wait(a ? &has_second : &has_first);
  pthread_rwlock_wrlock(a ? &second : &first);
  return nullptr;
}

bool deadlock_mode() {
  sem_init(&has_first, 0, 0);
  sem_init(&has_second, 0, 0);
  return run_threads(2, deadlock_role);
}

// ---- read -------------------------------------------------------------------

void* read_async_fd(void*) {
  char event[64];
  return read(verbs.context->async_fd, event, sizeof event) > 0 ? nullptr : &failed;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  int n = 0;
  ibv_device** list = ibv_get_device_list(&n);
  if (list == nullptr || n == 0 || !open_verbs(list)) return 2;
  bool ok = false;
  if (mode == "rwlock")
    ok = rwlock_mode();
  else if (mode == "semaphore")
    ok = semaphore_mode();
  else if (mode == "poll")
    ok = event_mode(Waiter::poll);
  else if (mode == "epoll")
    ok = event_mode(Waiter::epoll);
  else if (mode == "epoll_pwait2")
    ok = event_mode(Waiter::epoll_pwait2);
  else if (mode == "select")
    ok = event_mode(Waiter::select);
  else if (mode == "timed")
    ok = timed_mode();
  else if (mode == "alarm")
    ok = alarm_mode(false);
  else if (mode == "alarm_restart")
    ok = alarm_mode(true);
  else if (mode == "spin")
    ok = spin_mode();
  else if (mode == "pipe")
    ok = pipe_mode();
  else if (mode == "socket")
    ok = socket_mode();
  else if (mode == "deadlock")
    ok = deadlock_mode();
  else if (mode == "forever")
    ok = event_mode(Waiter::poll_forever);
  else if (mode == "read")
    ok = run_threads(1, read_async_fd);
  else
    return 2;
  std::printf("sync_calls %s: %s\n", mode.c_str(), ok ? "OK" : "FAILED");
  close_verbs();
  ibv_free_device_list(list);
  return ok ? 0 : 1;
}
