#include "verbs_kit.h"

#include "verbfault_testing/iwarp_connect.h"

#include <poll.h>
#include <time.h>

#include <cerrno>
#include <cstring>

namespace verbfault::probe {

namespace {

bool is_zero(const ibv_gid& gid) {
  for (uint8_t byte : gid.raw)
    if (byte != 0) return false;
  return true;
}

// An IPv4-mapped GID (::ffff:a.b.c.d) is RoCE v2 over the port's IPv4
// address: the one rxe loops back most plainly; any other non-zero GID
// does too.
bool is_ipv4_mapped(const ibv_gid& gid) {
  for (int i = 0; i < 10; ++i)
    if (gid.raw[i] != 0) return false;
  return gid.raw[10] == 0xff && gid.raw[11] == 0xff;
}

}  // namespace

int64_t now_ms() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000 + ts.tv_nsec / 1000000;
}

void sleep_ms(int ms) {
  timespec ts{ms / 1000, static_cast<long>(ms % 1000) * 1000000L};
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
  }
}

std::unique_ptr<Device> open_device(const std::string& name, std::string* why) {
  int count = 0;
  ibv_device** list = ibv_get_device_list(&count);
  if (list == nullptr) {
    *why = std::string("ibv_get_device_list failed: ") + std::strerror(errno);
    return nullptr;
  }
  ibv_context* ctx = nullptr;
  for (int i = 0; i < count; ++i)
    if (name == ibv_get_device_name(list[i])) ctx = ibv_open_device(list[i]);
  ibv_free_device_list(list);
  if (ctx == nullptr) {
    *why = "cannot open " + name;
    return nullptr;
  }
  auto dev = std::make_unique<Device>();
  dev->ctx = ctx;
  dev->pd = ibv_alloc_pd(ctx);
  if (dev->pd == nullptr || ibv_query_device(ctx, &dev->attr) != 0 ||
      ibv_query_port(ctx, dev->port_num, &dev->port) != 0) {
    *why = "cannot allocate a PD or query " + name;
    return nullptr;
  }
  if (dev->roce()) {
    ibv_gid gid{};
    for (int i = 0; i < dev->port.gid_tbl_len && i < 64; ++i) {
      if (ibv_query_gid(ctx, dev->port_num, i, &gid) != 0 || is_zero(gid)) continue;
      if (dev->gid_index < 0 || (is_ipv4_mapped(gid) && !is_ipv4_mapped(dev->gid))) {
        dev->gid_index = i;
        dev->gid = gid;
      }
    }
    if (dev->gid_index < 0) {
      *why = name + " is RoCE and has no GID to address itself by";
      return nullptr;
    }
  }
  return dev;
}

std::unique_ptr<Buffer> make_buffer(Device& dev, std::size_t size, int access) {
  auto buffer = std::make_unique<Buffer>();
  buffer->bytes.assign(size, 0);
  buffer->mr = ibv_reg_mr(dev.pd, buffer->bytes.data(), size, access);
  if (buffer->mr == nullptr) return nullptr;
  return buffer;
}

ibv_qp* create_qp(Device& dev, const QpSpec& spec, ibv_qp_cap* caps) {
  ibv_qp_init_attr init{};
  init.qp_type = spec.type;
  init.send_cq = spec.send_cq;
  init.recv_cq = spec.recv_cq;
  init.srq = spec.srq;
  init.cap.max_send_wr = spec.send_wr;
  init.cap.max_recv_wr = spec.srq != nullptr ? 0 : spec.recv_wr;
  init.cap.max_send_sge = spec.send_sge;
  init.cap.max_recv_sge = spec.srq != nullptr ? 0 : spec.recv_sge;
  init.cap.max_inline_data = spec.inline_data;
  ibv_qp* qp = ibv_create_qp(dev.pd, &init);
  if (qp != nullptr && caps != nullptr) *caps = init.cap;
  return qp;
}

ibv_qp_attr rc_attr(const Device& dev, ibv_qp_state to, uint32_t remote_qpn, const Link& link) {
  ibv_qp_attr a{};
  a.qp_state = to;
  a.pkey_index = 0;
  a.port_num = dev.port_num;
  a.qp_access_flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
                      IBV_ACCESS_REMOTE_ATOMIC;
  // The smallest MTU every port supports: no packet size question arises.
  a.path_mtu = IBV_MTU_1024 < dev.port.active_mtu ? IBV_MTU_1024 : dev.port.active_mtu;
  a.dest_qp_num = remote_qpn;
  a.rq_psn = 0;
  a.max_dest_rd_atomic = 1;
  a.min_rnr_timer = link.min_rnr_timer;
  a.ah_attr.port_num = dev.port_num;
  a.ah_attr.dlid = dev.port.lid;
  if (dev.roce()) {
    // RoCE addresses the peer by GID: a GRH is mandatory.
    a.ah_attr.is_global = 1;
    a.ah_attr.grh.dgid = dev.gid;
    a.ah_attr.grh.sgid_index = static_cast<uint8_t>(dev.gid_index);
    a.ah_attr.grh.hop_limit = 1;
  }
  a.timeout = link.timeout;
  a.retry_cnt = link.retry_cnt;
  a.rnr_retry = link.rnr_retry;
  a.sq_psn = 0;
  a.max_rd_atomic = 1;
  return a;
}

int to_init(Device& dev, ibv_qp* qp) {
  ibv_qp_attr a = rc_attr(dev, IBV_QPS_INIT, 0, {});
  return ibv_modify_qp(qp, &a, kInitMask);
}

int to_rtr(Device& dev, ibv_qp* qp, uint32_t remote_qpn, const Link& link) {
  ibv_qp_attr a = rc_attr(dev, IBV_QPS_RTR, remote_qpn, link);
  return ibv_modify_qp(qp, &a, kRtrMask);
}

int to_rts(Device& dev, ibv_qp* qp, const Link& link) {
  ibv_qp_attr a = rc_attr(dev, IBV_QPS_RTS, 0, link);
  return ibv_modify_qp(qp, &a, kRtsMask);
}

int connect(Device& dev, ibv_qp* qp, uint32_t remote_qpn, const Link& link) {
  if (int err = to_init(dev, qp)) return err;
  if (int err = to_rtr(dev, qp, remote_qpn, link)) return err;
  return to_rts(dev, qp, link);
}

int connect_pair(Device& dev, ibv_qp* a, ibv_qp* b, const Link& link_a, const Link& link_b,
                 std::string* why) {
  std::string step;
  int err = 0;
  if (!dev.iwarp()) {
    if ((err = connect(dev, a, b->qp_num, link_a)) != 0)
      step = "connecting the first QP";
    else if ((err = connect(dev, b, a->qp_num, link_b)) != 0)
      step = "connecting the second QP";
  } else if ((err = to_init(dev, a)) != 0 || (err = to_init(dev, b)) != 0) {
    step = "ibv_modify_qp to INIT";
  } else {
    err = testing::iwarp_connect(dev.ctx, a, b, kPositiveMs, &step);
  }
  if (err != 0 && why != nullptr) *why = step + (step.empty() ? "" : ": ") + std::strerror(err);
  return err;
}

int to_state(ibv_qp* qp, ibv_qp_state state) {
  ibv_qp_attr a{};
  a.qp_state = state;
  return ibv_modify_qp(qp, &a, IBV_QP_STATE);
}

int qp_state(ibv_qp* qp) {
  ibv_qp_attr a{};
  ibv_qp_init_attr init{};
  if (ibv_query_qp(qp, &a, IBV_QP_STATE, &init) != 0) return -1;
  return a.qp_state;
}

int post_send(ibv_qp* qp, ibv_wr_opcode opcode, const Buffer& local, uint32_t length,
              uint64_t wr_id, unsigned flags, const Buffer* remote, uint32_t imm) {
  ibv_sge sge{reinterpret_cast<uintptr_t>(local.bytes.data()), length, local.mr->lkey};
  ibv_send_wr wr{};
  wr.wr_id = wr_id;
  wr.sg_list = &sge;
  wr.num_sge = length == 0 ? 0 : 1;
  wr.opcode = opcode;
  wr.send_flags = flags;
  wr.imm_data = htobe32(imm);
  if (remote != nullptr) {
    wr.wr.rdma.remote_addr = reinterpret_cast<uintptr_t>(remote->bytes.data());
    wr.wr.rdma.rkey = remote->mr->rkey;
  }
  ibv_send_wr* bad = nullptr;
  return ibv_post_send(qp, &wr, &bad);
}

namespace {

// One receive WR of one SGE over `local`, posted by `post` (a QP's or an SRQ's).
template <typename Queue>
int post_one_recv(int (*post)(Queue*, ibv_recv_wr*, ibv_recv_wr**), Queue* queue,
                  const Buffer& local, uint32_t length, uint64_t wr_id) {
  ibv_sge sge{reinterpret_cast<uintptr_t>(local.bytes.data()), length, local.mr->lkey};
  ibv_recv_wr wr{};
  wr.wr_id = wr_id;
  wr.sg_list = &sge;
  wr.num_sge = 1;
  ibv_recv_wr* bad = nullptr;
  return post(queue, &wr, &bad);
}

}  // namespace

int post_recv(ibv_qp* qp, const Buffer& local, uint32_t length, uint64_t wr_id) {
  return post_one_recv(&ibv_post_recv, qp, local, length, wr_id);
}

int post_srq_recv(ibv_srq* srq, const Buffer& local, uint32_t length, uint64_t wr_id) {
  return post_one_recv(&ibv_post_srq_recv, srq, local, length, wr_id);
}

Polled poll_for(ibv_cq* cq, std::size_t want, int timeout_ms) {
  Polled out;
  const int64_t deadline = now_ms() + timeout_ms;
  while (out.wcs.size() < want) {
    ibv_wc wc[8];
    const int room = static_cast<int>(std::min<std::size_t>(8, want - out.wcs.size()));
    const int n = ibv_poll_cq(cq, room, wc);
    if (n < 0) {
      out.error = n;
      break;
    }
    out.wcs.insert(out.wcs.end(), wc, wc + n);
    if (n > 0) continue;
    if (now_ms() >= deadline) break;
    // Not a busy loop: a software provider (rxe) needs the CPU to make
    // the completion this waits for.
    timespec pause{0, 100000};
    nanosleep(&pause, nullptr);
  }
  return out;
}

ibv_cq* wait_cq_event(ibv_comp_channel* channel, int timeout_ms, void** cq_context) {
  pollfd p{channel->fd, POLLIN, 0};
  const int64_t deadline = now_ms() + timeout_ms;
  for (;;) {
    const int64_t left = deadline - now_ms();
    const int ready = poll(&p, 1, static_cast<int>(left > 0 ? left : 0));
    if (ready > 0) break;
    if (ready == 0 || errno != EINTR) return nullptr;
  }
  ibv_cq* cq = nullptr;
  void* context = nullptr;
  if (ibv_get_cq_event(channel, &cq, &context) != 0) return nullptr;
  if (cq_context != nullptr) *cq_context = context;
  return cq;
}

std::vector<ibv_async_event> collect_async(ibv_context* ctx, int timeout_ms,
                                           const std::function<bool(const ibv_async_event&)>& done,
                                           bool keep_last) {
  std::vector<ibv_async_event> out;
  pollfd p{ctx->async_fd, POLLIN, 0};
  const int64_t deadline = now_ms() + timeout_ms;
  for (;;) {
    const int64_t left = deadline - now_ms();
    const int ready = poll(&p, 1, static_cast<int>(left > 0 ? left : 0));
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) break;
    ibv_async_event event{};
    if (ibv_get_async_event(ctx, &event) != 0) break;
    const bool last = done && done(event);
    if (!(last && keep_last)) ibv_ack_async_event(&event);
    out.push_back(event);
    if (last) break;
  }
  return out;
}

}  // namespace verbfault::probe
