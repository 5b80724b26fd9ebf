// verbs_pair: a two-process RC program in plain libibverbs, a "target" and a
// "requester", that provoke the transport's error cases across the process
// boundary and check what each side observes against the verbs man pages
// and the IBTA spec. Each side exits 0 when it saw what the spec says, 1
// otherwise (one "FAIL: ..." line says what), 2 on a setup error.
//
//   verbs_pair --role target    --scenario S --port P
//   verbs_pair --role requester --scenario S --port P [--host H]
//
// The target listens on TCP port P, the requester connects; they trade
// their addresses (LID, QPN, PSN, rkey, buffer address, pid) and a few
// one-byte signals over that connection, as the pingpong examples do. Any
// RC-capable device works (the first one, or --device NAME).
//
// Scenarios (README.md, "Faults between two processes"):
//   kill        the requester posts RDMA WRITEs and SENDs (the target has no
//               receive posted, so the SENDs are RNR-NAKed, rnr_retry 7,
//               and stay outstanding), then SIGKILLs the target: the first
//               WR not completed ends IBV_WC_RETRY_EXC_ERR, every later one
//               IBV_WC_WR_FLUSH_ERR, the QP is in ERR (IBA 9.7.6.1.3,
//               10.8.3.3; timeout 31 and retry_cnt 7: hours of real time).
//   rnr         the target never posts a receive; rnr_retry 0: the SEND ends
//               IBV_WC_RNR_RETRY_EXC_ERR, the next one is flushed; the
//               target's QP is still RTS with nothing on its CQ (IBA
//               9.7.5.2.8: an RNR NAK is no error at the responder).
//   rnr_late    rnr_retry 7 (retry forever): the SEND is RNR-NAKed until the
//               target posts its receive, then both sides complete it.
//   target_err  the target posts 4 receives and moves its QP to ERR: it
//               polls 4 IBV_WC_WR_FLUSH_ERR in order; the requester's SEND
//               then gets no answer: IBV_WC_RETRY_EXC_ERR (timeout 31,
//               retry_cnt 7).
//   cq_overflow the target's receive CQ is smaller than the SENDs coming:
//               IBV_EVENT_CQ_ERR and IBV_EVENT_QP_FATAL at the target, its
//               QP in ERR (IBA 11.6.3.1); the requester's SENDs complete
//               until the overrun, then the next one gets no answer
//               (IBV_WC_RETRY_EXC_ERR) and the rest are flushed.
//   port_down   the target's port goes down (from outside: a fault plan, an
//               unplugged cable) after the connection is made: the target
//               gets IBV_EVENT_PORT_ERR and reads the port DOWN; the
//               requester's SEND ends IBV_WC_RETRY_EXC_ERR.
#include <arpa/inet.h>
#include <fcntl.h>
#include <infiniband/verbs.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

const char* g_role = "?";

[[noreturn]] void die(int status, const char* format, ...) {
  va_list args;
  va_start(args, format);
  std::fprintf(stdout, "%s: %s", g_role, status == 1 ? "FAIL: " : "error: ");
  std::vfprintf(stdout, format, args);
  std::fputc('\n', stdout);
  va_end(args);
  std::fflush(stdout);
  std::exit(status);
}

void say(const char* format, ...) {
  va_list args;
  va_start(args, format);
  std::fprintf(stdout, "%s: ", g_role);
  std::vfprintf(stdout, format, args);
  std::fputc('\n', stdout);
  va_end(args);
  std::fflush(stdout);
}

// A check of what the spec says: exit 1 when it does not hold.
#define EXPECT(cond, ...)             \
  do {                                \
    if (!(cond)) die(1, __VA_ARGS__); \
  } while (0)

double seconds_now() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

// ---------------------------------------------------------------- TCP

struct Address {
  uint32_t lid, qpn, psn, rkey;
  uint64_t addr;
  int32_t pid;
  uint32_t count;  // the target: how many SENDs it can take (cq_overflow)
};

int listen_and_accept(int port) {
  int s = socket(AF_INET, SOCK_STREAM, 0);
  if (s < 0) die(2, "socket: %s", std::strerror(errno));
  int one = 1;
  setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (bind(s, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0)
    die(2, "couldn't listen to port %d: %s", port, std::strerror(errno));
  if (listen(s, 1) != 0) die(2, "listen: %s", std::strerror(errno));
  int c = accept(s, nullptr, nullptr);
  if (c < 0) die(2, "accept: %s", std::strerror(errno));
  close(s);
  return c;
}

int connect_to(const char* host, int port) {
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  if (inet_pton(AF_INET, host, &a.sin_addr) != 1) die(2, "bad host %s", host);
  for (int attempt = 0; attempt < 200; ++attempt) {  // the target may not listen yet
    int s = socket(AF_INET, SOCK_STREAM, 0);
    if (s < 0) die(2, "socket: %s", std::strerror(errno));
    if (connect(s, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0) return s;
    close(s);
    usleep(50 * 1000);
  }
  die(2, "couldn't connect to %s:%d", host, port);
}

void write_all(int fd, const void* p, size_t n) {
  const char* c = static_cast<const char*>(p);
  while (n > 0) {
    ssize_t w = write(fd, c, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) die(2, "write to the peer: %s", std::strerror(errno));
    c += w;
    n -= static_cast<size_t>(w);
  }
}

// False when the peer closed the connection.
bool read_all(int fd, void* p, size_t n) {
  char* c = static_cast<char*>(p);
  while (n > 0) {
    ssize_t r = read(fd, c, n);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) die(2, "read from the peer: %s", std::strerror(errno));
    if (r == 0) return false;
    c += r;
    n -= static_cast<size_t>(r);
  }
  return true;
}

void signal_peer(int fd, char what) {
  write_all(fd, &what, 1);
}

void wait_peer(int fd, char what) {
  char got = 0;
  if (!read_all(fd, &got, 1)) die(2, "the peer closed the connection (waiting for '%c')", what);
  if (got != what) die(2, "the peer said '%c', expected '%c'", got, what);
}

// ---------------------------------------------------------------- verbs

struct Side {
  ibv_context* ctx = nullptr;
  ibv_pd* pd = nullptr;
  ibv_cq* send_cq = nullptr;
  ibv_cq* recv_cq = nullptr;
  ibv_qp* qp = nullptr;
  ibv_mr* mr = nullptr;
  std::vector<char> buf;
  uint16_t lid = 0;
  uint32_t psn = 0;
};

constexpr size_t kBufBytes = 8 << 20;

Side open_side(const char* device_name, int recv_cq_entries) {
  Side s;
  int n = 0;
  ibv_device** list = ibv_get_device_list(&n);
  if (list == nullptr || n == 0) die(2, "no RDMA device");
  ibv_device* dev = list[0];
  if (device_name != nullptr) {
    dev = nullptr;
    for (int i = 0; i < n; ++i)
      if (std::strcmp(ibv_get_device_name(list[i]), device_name) == 0) dev = list[i];
    if (dev == nullptr) die(2, "no device %s", device_name);
  }
  s.ctx = ibv_open_device(dev);
  ibv_free_device_list(list);
  if (s.ctx == nullptr) die(2, "ibv_open_device failed");
  s.pd = ibv_alloc_pd(s.ctx);
  s.buf.assign(kBufBytes, 0);
  s.mr = ibv_reg_mr(s.pd, s.buf.data(), s.buf.size(),
                    IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ);
  s.send_cq = ibv_create_cq(s.ctx, 256, nullptr, nullptr, 0);
  s.recv_cq = ibv_create_cq(s.ctx, recv_cq_entries, nullptr, nullptr, 0);
  if (s.pd == nullptr || s.mr == nullptr || s.send_cq == nullptr || s.recv_cq == nullptr)
    die(2, "setting up the PD, MR or CQs failed");
  ibv_qp_init_attr init{};
  init.send_cq = s.send_cq;
  init.recv_cq = s.recv_cq;
  init.qp_type = IBV_QPT_RC;
  init.cap.max_send_wr = 64;
  init.cap.max_recv_wr = 64;
  init.cap.max_send_sge = 1;
  init.cap.max_recv_sge = 1;
  s.qp = ibv_create_qp(s.pd, &init);
  if (s.qp == nullptr) die(2, "ibv_create_qp: %s", std::strerror(errno));
  ibv_qp_attr a{};
  a.qp_state = IBV_QPS_INIT;
  a.port_num = 1;
  a.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
  if (ibv_modify_qp(s.qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS))
    die(2, "modify to INIT failed");
  ibv_port_attr port{};
  if (ibv_query_port(s.ctx, 1, &port)) die(2, "ibv_query_port failed");
  s.lid = port.lid;
  s.psn = static_cast<uint32_t>(getpid() * 7919) & 0xffffff;
  return s;
}

struct Timers {
  uint8_t timeout = 14, retry_cnt = 7, rnr_retry = 7, min_rnr_timer = 1;
};

void connect_qp(Side& s, const Address& remote, const Timers& t) {
  ibv_qp_attr a{};
  a.qp_state = IBV_QPS_RTR;
  a.path_mtu = IBV_MTU_1024;
  a.dest_qp_num = remote.qpn;
  a.rq_psn = remote.psn;
  a.max_dest_rd_atomic = 1;
  a.min_rnr_timer = t.min_rnr_timer;
  a.ah_attr.dlid = static_cast<uint16_t>(remote.lid);
  a.ah_attr.port_num = 1;
  if (ibv_modify_qp(s.qp, &a,
                    IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
                        IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER))
    die(2, "modify to RTR failed");
  a = {};
  a.qp_state = IBV_QPS_RTS;
  a.sq_psn = s.psn;
  a.timeout = t.timeout;
  a.retry_cnt = t.retry_cnt;
  a.rnr_retry = t.rnr_retry;
  a.max_rd_atomic = 1;
  if (ibv_modify_qp(s.qp, &a,
                    IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
                        IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC))
    die(2, "modify to RTS failed");
}

Address local_address(const Side& s, uint32_t count = 0) {
  return Address{s.lid,
                 s.qp->qp_num,
                 s.psn,
                 s.mr->rkey,
                 reinterpret_cast<uintptr_t>(s.buf.data()),
                 static_cast<int32_t>(getpid()),
                 count};
}

// Everything destroyed, in the order ibv_destroy_*(3) require.
void close_side(Side& s) {
  if (ibv_destroy_qp(s.qp) || ibv_destroy_cq(s.send_cq) || ibv_destroy_cq(s.recv_cq) ||
      ibv_dereg_mr(s.mr) || ibv_dealloc_pd(s.pd) || ibv_close_device(s.ctx))
    die(2, "tearing down failed");
}

ibv_qp_state qp_state(ibv_qp* qp) {
  ibv_qp_attr a{};
  ibv_qp_init_attr init{};
  if (ibv_query_qp(qp, &a, IBV_QP_STATE, &init)) die(2, "ibv_query_qp failed");
  return a.qp_state;
}

const char* state_name(ibv_qp_state s) {
  switch (s) {
    case IBV_QPS_RESET:
      return "RESET";
    case IBV_QPS_INIT:
      return "INIT";
    case IBV_QPS_RTR:
      return "RTR";
    case IBV_QPS_RTS:
      return "RTS";
    case IBV_QPS_SQD:
      return "SQD";
    case IBV_QPS_SQE:
      return "SQE";
    case IBV_QPS_ERR:
      return "ERR";
    default:
      return "?";
  }
}

void post_send(Side& s, uint64_t wr_id, ibv_wr_opcode op, size_t offset, uint32_t length,
               const Address* remote = nullptr) {
  ibv_sge sge{reinterpret_cast<uintptr_t>(s.buf.data() + offset), length, s.mr->lkey};
  ibv_send_wr wr{};
  wr.wr_id = wr_id;
  wr.sg_list = &sge;
  wr.num_sge = 1;
  wr.opcode = op;
  wr.send_flags = IBV_SEND_SIGNALED;
  if (remote != nullptr) {
    wr.wr.rdma.remote_addr = remote->addr + offset;
    wr.wr.rdma.rkey = remote->rkey;
  }
  ibv_send_wr* bad = nullptr;
  int err = ibv_post_send(s.qp, &wr, &bad);
  if (err)
    die(2, "ibv_post_send (wr_id %llu): %s", static_cast<unsigned long long>(wr_id),
        std::strerror(err));
}

void post_recv(Side& s, uint64_t wr_id, size_t offset, uint32_t length) {
  ibv_sge sge{reinterpret_cast<uintptr_t>(s.buf.data() + offset), length, s.mr->lkey};
  ibv_recv_wr wr{};
  wr.wr_id = wr_id;
  wr.sg_list = &sge;
  wr.num_sge = 1;
  ibv_recv_wr* bad = nullptr;
  int err = ibv_post_recv(s.qp, &wr, &bad);
  if (err) die(2, "ibv_post_recv: %s", std::strerror(err));
}

// Polls `cq` until `n` completions are there (or `limit` seconds of wall
// clock: a hang, not a timing assertion).
std::vector<ibv_wc> poll_n(ibv_cq* cq, size_t n, double limit = 30) {
  std::vector<ibv_wc> out;
  const double end = seconds_now() + limit;
  while (out.size() < n) {
    ibv_wc wc[16];
    int got = ibv_poll_cq(cq, static_cast<int>(std::min<size_t>(16, n - out.size())), wc);
    if (got < 0) die(1, "ibv_poll_cq returned %d with %zu of %zu completions", got, out.size(), n);
    for (int i = 0; i < got; ++i) {
      out.push_back(wc[i]);
      say("completion wr_id=%llu status=%s (%d)", static_cast<unsigned long long>(wc[i].wr_id),
          ibv_wc_status_str(wc[i].status), wc[i].status);
    }
    if (got == 0 && seconds_now() > end)
      die(1, "%zu of %zu completions after %.0f s", out.size(), n, limit);
  }
  return out;
}

void expect_empty(ibv_cq* cq, const char* which) {
  ibv_wc wc{};
  int got = ibv_poll_cq(cq, 1, &wc);
  EXPECT(got == 0, "the %s CQ is not empty: poll returned %d (wr_id %llu, %s)", which, got,
         static_cast<unsigned long long>(wc.wr_id), got > 0 ? ibv_wc_status_str(wc.status) : "");
}

// Completions of one QP's send queue after a transport error: in posting
// order (`first_id`, first_id+1, ...), a prefix of successes, then exactly
// one `error` (the WR the error happened to), then IBV_WC_WR_FLUSH_ERR for
// the rest (ibv_poll_cq(3); IBA 10.8.3.3). Returns the number of successes.
size_t expect_error_then_flush(const std::vector<ibv_wc>& wcs, const std::vector<uint64_t>& ids,
                               ibv_wc_status error, uint32_t qpn) {
  EXPECT(wcs.size() == ids.size(), "%zu completions, expected %zu", wcs.size(), ids.size());
  size_t ok = 0;
  while (ok < wcs.size() && wcs[ok].status == IBV_WC_SUCCESS) ++ok;
  for (size_t i = 0; i < wcs.size(); ++i) {
    EXPECT(wcs[i].wr_id == ids[i], "completion %zu has wr_id %llu, expected %llu (posting order)",
           i, static_cast<unsigned long long>(wcs[i].wr_id),
           static_cast<unsigned long long>(ids[i]));
    EXPECT(wcs[i].qp_num == qpn, "completion %zu has qp_num 0x%x, expected 0x%x", i, wcs[i].qp_num,
           qpn);
    const ibv_wc_status want = i < ok ? IBV_WC_SUCCESS : i == ok ? error : IBV_WC_WR_FLUSH_ERR;
    EXPECT(wcs[i].status == want, "completion %zu (wr_id %llu): %s, expected %s", i,
           static_cast<unsigned long long>(wcs[i].wr_id), ibv_wc_status_str(wcs[i].status),
           ibv_wc_status_str(want));
  }
  EXPECT(ok < wcs.size(), "every WR succeeded, expected %s", ibv_wc_status_str(error));
  return ok;
}

// Async events that arrive within `limit` seconds, until `want` of them.
std::vector<ibv_async_event> read_events(ibv_context* ctx, size_t want, double limit) {
  std::vector<ibv_async_event> out;
  const int flags = fcntl(ctx->async_fd, F_GETFL);
  fcntl(ctx->async_fd, F_SETFL, flags | O_NONBLOCK);
  const double end = seconds_now() + limit;
  while (out.size() < want) {
    const double left = end - seconds_now();
    if (left <= 0) break;
    pollfd p{ctx->async_fd, POLLIN, 0};
    if (poll(&p, 1, static_cast<int>(left * 1000) + 1) <= 0) continue;
    ibv_async_event e{};
    if (ibv_get_async_event(ctx, &e) != 0) continue;
    say("async event %s", ibv_event_type_str(e.event_type));
    out.push_back(e);
    ibv_ack_async_event(&e);
  }
  return out;
}

// ---------------------------------------------------------------- the roles

struct Options {
  std::string role, scenario, host = "127.0.0.1";
  const char* device = nullptr;
  int port = 0;
};

Timers timers_for(const std::string& scenario) {
  Timers t;
  if (scenario == "kill" || scenario == "target_err" || scenario == "cq_overflow" ||
      scenario == "port_down") {
    // 4.096 us * 2^31 = 2.4 hours per try, 8 tries: only a virtual clock
    // gets through this in a test.
    t.timeout = 31;
    t.retry_cnt = 7;
  }
  if (scenario == "rnr") t.rnr_retry = 0;
  return t;
}

int run_target(const Options& o) {
  const bool overflow = o.scenario == "cq_overflow";
  Side s = open_side(o.device, overflow ? 4 : 64);
  const Timers t = timers_for(o.scenario);
  // cq_overflow: as many receives as the CQ holds and 3 more; the requester
  // sends that many.
  const uint32_t cq_size = static_cast<uint32_t>(s.recv_cq->cqe);
  const uint32_t count = overflow ? cq_size + 3 : 0;
  if (overflow) {
    EXPECT(cq_size + 3 <= 64, "the CQ has %u entries (asked for 4): too many for this test",
           cq_size);
    for (uint32_t i = 0; i < count; ++i) post_recv(s, 100 + i, 4096 * i, 4096);
  }
  if (o.scenario == "target_err")
    for (uint64_t i = 0; i < 4; ++i) post_recv(s, 11 + i, 4096 * i, 4096);
  int fd = listen_and_accept(o.port);
  Address mine = local_address(s, count), peer{};
  write_all(fd, &mine, sizeof mine);
  if (!read_all(fd, &peer, sizeof peer)) die(2, "the requester closed the connection");
  connect_qp(s, peer, t);
  EXPECT(qp_state(s.qp) == IBV_QPS_RTS, "the QP is %s after connecting, expected RTS",
         state_name(qp_state(s.qp)));
  say("connected: LID 0x%x QPN 0x%x <-> LID 0x%x QPN 0x%x", s.lid, s.qp->qp_num, peer.lid,
      peer.qpn);
  signal_peer(fd, 'c');

  if (o.scenario == "kill") {
    // Waits to be killed; the requester's connection closing first is a failure.
    char c;
    read_all(fd, &c, 1);
    die(1, "still alive: the requester was to kill this process");
  } else if (o.scenario == "rnr") {
    wait_peer(fd, 'd');
    // IBA 9.7.5.2.8: RNR NAKs change nothing at the responder.
    EXPECT(qp_state(s.qp) == IBV_QPS_RTS, "the QP is %s after the RNR NAKs, expected RTS",
           state_name(qp_state(s.qp)));
    expect_empty(s.recv_cq, "receive");
    EXPECT(read_events(s.ctx, 1, 0.2).empty(), "an async event after RNR NAKs");
  } else if (o.scenario == "rnr_late") {
    wait_peer(fd, 'p');  // the SEND is out and NAKed
    post_recv(s, 7, 0, 4096);
    auto wcs = poll_n(s.recv_cq, 1);
    EXPECT(wcs[0].status == IBV_WC_SUCCESS && wcs[0].wr_id == 7 && wcs[0].opcode == IBV_WC_RECV,
           "the receive: wr_id %llu status %s opcode %d, expected 7 success IBV_WC_RECV",
           static_cast<unsigned long long>(wcs[0].wr_id), ibv_wc_status_str(wcs[0].status),
           wcs[0].opcode);
    EXPECT(wcs[0].byte_len == 1000, "byte_len %u, expected 1000", wcs[0].byte_len);
    for (int i = 0; i < 1000; ++i)
      EXPECT(s.buf[i] == static_cast<char>('a' + i % 26), "byte %d of the message is wrong", i);
    wait_peer(fd, 'd');
  } else if (o.scenario == "target_err") {
    ibv_qp_attr a{};
    a.qp_state = IBV_QPS_ERR;
    if (ibv_modify_qp(s.qp, &a, IBV_QP_STATE)) die(2, "modify to ERR failed");
    // ibv_modify_qp(3), IBA 10.8.3.3: every outstanding receive is flushed,
    // in the order posted.
    auto wcs = poll_n(s.recv_cq, 4);
    for (size_t i = 0; i < 4; ++i) {
      EXPECT(wcs[i].wr_id == 11 + i && wcs[i].status == IBV_WC_WR_FLUSH_ERR &&
                 wcs[i].qp_num == s.qp->qp_num,
             "receive completion %zu: wr_id %llu status %s qp 0x%x, expected wr_id %zu "
             "IBV_WC_WR_FLUSH_ERR qp 0x%x",
             i, static_cast<unsigned long long>(wcs[i].wr_id), ibv_wc_status_str(wcs[i].status),
             wcs[i].qp_num, 11 + i, s.qp->qp_num);
    }
    expect_empty(s.recv_cq, "receive");
    signal_peer(fd, 'e');
    wait_peer(fd, 'd');
    expect_empty(s.recv_cq, "receive");  // the SEND found no receiver
  } else if (o.scenario == "cq_overflow") {
    wait_peer(fd, 'd');
    // ibv_create_cq(3), IBA 11.6.3.1: a CQ overrun is an affiliated
    // asynchronous error (IBV_EVENT_CQ_ERR); the QPs on it get
    // IBV_EVENT_QP_FATAL and go to ERR.
    auto events = read_events(s.ctx, 2, 5);
    EXPECT(events.size() == 2, "%zu async events, expected IBV_EVENT_CQ_ERR and IBV_EVENT_QP_FATAL",
           events.size());
    EXPECT(events[0].event_type == IBV_EVENT_CQ_ERR && events[0].element.cq == s.recv_cq,
           "the first event is %s, expected IBV_EVENT_CQ_ERR on the receive CQ",
           ibv_event_type_str(events[0].event_type));
    EXPECT(events[1].event_type == IBV_EVENT_QP_FATAL && events[1].element.qp == s.qp,
           "the second event is %s, expected IBV_EVENT_QP_FATAL on the QP",
           ibv_event_type_str(events[1].event_type));
    EXPECT(qp_state(s.qp) == IBV_QPS_ERR, "the QP is %s, expected ERR", state_name(qp_state(s.qp)));
    ibv_wc wc{};
    const int polled = ibv_poll_cq(s.recv_cq, 1, &wc);
    say("ibv_poll_cq on the overrun CQ returns %d", polled);
  } else if (o.scenario == "port_down") {
    // A receive for the SEND to come; the port goes down from outside (a
    // fault plan: `port_down qp#0 nth=4`: the 3 ibv_modify_qp calls, then this post).
    post_recv(s, 7, 0, 4096);
    auto events = read_events(s.ctx, 1, 10);
    EXPECT(events.size() == 1 && events[0].event_type == IBV_EVENT_PORT_ERR &&
               events[0].element.port_num == 1,
           "expected IBV_EVENT_PORT_ERR on port 1, got %s",
           events.empty() ? "nothing in 10 s" : ibv_event_type_str(events[0].event_type));
    ibv_port_attr port{};
    if (ibv_query_port(s.ctx, 1, &port)) die(2, "ibv_query_port failed");
    EXPECT(port.state == IBV_PORT_DOWN, "the port is %s after IBV_EVENT_PORT_ERR, expected DOWN",
           ibv_port_state_str(port.state));
    signal_peer(fd, 'x');
    wait_peer(fd, 'd');
    expect_empty(s.recv_cq, "receive");
  } else {
    die(2, "unknown scenario %s", o.scenario.c_str());
  }
  close_side(s);
  say("PASS");
  return 0;
}

int run_requester(const Options& o) {
  Side s = open_side(o.device, 64);
  const Timers t = timers_for(o.scenario);
  int fd = connect_to(o.host.c_str(), o.port);
  Address peer{}, mine = local_address(s);
  if (!read_all(fd, &peer, sizeof peer)) die(2, "the target closed the connection");
  write_all(fd, &mine, sizeof mine);
  connect_qp(s, peer, t);
  wait_peer(fd, 'c');
  say("connected: LID 0x%x QPN 0x%x <-> LID 0x%x QPN 0x%x", s.lid, s.qp->qp_num, peer.lid,
      peer.qpn);
  for (size_t i = 0; i < 1000; ++i) s.buf[i] = static_cast<char>('a' + i % 26);
  const uint32_t qpn = s.qp->qp_num;

  if (o.scenario == "kill") {
    // 8 WRITEs of 512 KiB and 4 SENDs, and the target dies.
    std::vector<uint64_t> ids;
    for (uint64_t i = 0; i < 8; ++i) {
      post_send(s, 1 + i, IBV_WR_RDMA_WRITE, i * (512 << 10), 512 << 10, &peer);
      ids.push_back(1 + i);
    }
    for (uint64_t i = 0; i < 4; ++i) {
      post_send(s, 101 + i, IBV_WR_SEND, 0, 64);
      ids.push_back(101 + i);
    }
    // Mid-run: once the first WRITE is done (the rest may be in flight,
    // the SENDs are RNR-NAKed and retried).
    auto wcs = poll_n(s.send_cq, 1);
    if (kill(peer.pid, SIGKILL) != 0) die(2, "kill %d: %s", peer.pid, std::strerror(errno));
    say("killed the target (pid %d)", peer.pid);
    auto rest = poll_n(s.send_cq, ids.size() - 1);
    wcs.insert(wcs.end(), rest.begin(), rest.end());
    const size_t ok = expect_error_then_flush(wcs, ids, IBV_WC_RETRY_EXC_ERR, qpn);
    EXPECT(ok >= 1, "the first WRITE failed while the target was alive");
    // The SENDs cannot succeed: the target never posted a receive.
    EXPECT(ok <= 8, "a SEND succeeded without a receive at the target");
    say("%zu WRITEs completed before the target died", ok);
  } else if (o.scenario == "rnr") {
    post_send(s, 1, IBV_WR_SEND, 0, 64);
    post_send(s, 2, IBV_WR_SEND, 0, 64);
    auto wcs = poll_n(s.send_cq, 2);
    expect_error_then_flush(wcs, {1, 2}, IBV_WC_RNR_RETRY_EXC_ERR, qpn);
    EXPECT(wcs[0].status == IBV_WC_RNR_RETRY_EXC_ERR,
           "the SEND did not end in RNR retry exhaustion");
    signal_peer(fd, 'd');
  } else if (o.scenario == "rnr_late") {
    post_send(s, 1, IBV_WR_SEND, 0, 1000);
    // Empty polls: the device's clock moves, the SEND is NAKed and sent again.
    for (int i = 0; i < 1000; ++i) {
      ibv_wc wc{};
      int got = ibv_poll_cq(s.send_cq, 1, &wc);
      EXPECT(got == 0, "the SEND completed (%s) before the target posted a receive",
             got > 0 ? ibv_wc_status_str(wc.status) : "poll failed");
    }
    signal_peer(fd, 'p');
    auto wcs = poll_n(s.send_cq, 1);
    EXPECT(wcs[0].wr_id == 1 && wcs[0].status == IBV_WC_SUCCESS && wcs[0].opcode == IBV_WC_SEND,
           "the SEND: wr_id %llu %s, expected 1 success IBV_WC_SEND",
           static_cast<unsigned long long>(wcs[0].wr_id), ibv_wc_status_str(wcs[0].status));
    signal_peer(fd, 'd');
  } else if (o.scenario == "target_err" || o.scenario == "port_down") {
    wait_peer(fd, o.scenario == "target_err" ? 'e' : 'x');
    post_send(s, 1, IBV_WR_SEND, 0, 64);
    post_send(s, 2, IBV_WR_RDMA_WRITE, 4096, 64, &peer);
    auto wcs = poll_n(s.send_cq, 2);
    expect_error_then_flush(wcs, {1, 2}, IBV_WC_RETRY_EXC_ERR, qpn);
    EXPECT(wcs[0].status == IBV_WC_RETRY_EXC_ERR, "the SEND did not end in retry exhaustion");
    signal_peer(fd, 'd');
  } else if (o.scenario == "cq_overflow") {
    const uint32_t n = peer.count;
    EXPECT(n >= 4, "the target says it takes %u SENDs", n);
    std::vector<uint64_t> ids;
    for (uint32_t i = 0; i < n; ++i) {
      post_send(s, 1 + i, IBV_WR_SEND, 0, 64);
      ids.push_back(1 + i);
    }
    auto wcs = poll_n(s.send_cq, n);
    const size_t ok = expect_error_then_flush(wcs, ids, IBV_WC_RETRY_EXC_ERR, qpn);
    // The target's CQ holds n - 3 completions: those SENDs complete; the
    // one that overran it was received (its data placed) before the
    // responder found no room for its completion.
    EXPECT(ok == n - 3 || ok == n - 2, "%zu SENDs succeeded, expected %u (the CQ's size) or %u", ok,
           n - 3, n - 2);
    say("%zu SENDs succeeded before the target's CQ overran", ok);
    signal_peer(fd, 'd');
  } else {
    die(2, "unknown scenario %s", o.scenario.c_str());
  }
  EXPECT(qp_state(s.qp) == IBV_QPS_ERR || o.scenario == "rnr_late", "the QP is %s, expected ERR",
         state_name(qp_state(s.qp)));
  close_side(s);
  say("PASS");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    const char* v = i + 1 < argc ? argv[i + 1] : nullptr;
    if (a == "--role" && v)
      o.role = argv[++i];
    else if (a == "--scenario" && v)
      o.scenario = argv[++i];
    else if (a == "--port" && v)
      o.port = std::atoi(argv[++i]);
    else if (a == "--host" && v)
      o.host = argv[++i];
    else if (a == "--device" && v)
      o.device = argv[++i];
    else {
      std::fprintf(
          stderr,
          "usage: %s --role target|requester --scenario S --port P [--host H] [--device D]\n",
          argv[0]);
      return 2;
    }
  }
  if ((o.role != "target" && o.role != "requester") || o.scenario.empty() || o.port <= 0) {
    std::fprintf(stderr, "usage: %s --role target|requester --scenario S --port P\n", argv[0]);
    return 2;
  }
  g_role = o.role.c_str();
  signal(SIGPIPE, SIG_IGN);
  return o.role == "target" ? run_target(o) : run_requester(o);
}
