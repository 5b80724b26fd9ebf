// What every area of the probe needs to set up a situation on one device:
// open it, make CQs, QPs and registered buffers, move an RC QP through
// its states, connect two QPs of the same device to each other, post,
// and wait, always with a wall-clock bound, for completions and events.
// Plain libibverbs: this runs unmodified on any provider.
//
// Objects are not destroyed unless a check is about destroying them: each
// area runs in a child process of its own (main.cpp) that ends with
// _exit, and the kernel (or, for a simulated device, the end of the
// process) takes everything back.
#pragma once

#include <infiniband/verbs.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace verbfault::probe {

// Bounds of every wait. A behaviour that should happen gets kPositiveMs
// (far above what any provider takes, even rxe in an emulated VM); one
// that should not happen is watched for kNegativeMs.
inline constexpr int kPositiveMs = 3000;
inline constexpr int kNegativeMs = 300;

// One open device: its context, a PD, its attributes and how to address
// its own port 1 (by LID on InfiniBand, by GID with a GRH on RoCE).
struct Device {
  ibv_context* ctx = nullptr;
  ibv_pd* pd = nullptr;
  ibv_device_attr attr{};
  ibv_port_attr port{};
  uint8_t port_num = 1;
  int gid_index = -1;  // RoCE: the GID the QPs address each other by
  ibv_gid gid{};

  bool roce() const { return port.link_layer == IBV_LINK_LAYER_ETHERNET && !iwarp(); }
  // iWARP (siw, ...): QPs connect only through the iWARP CM (iwarp_connect.h).
  bool iwarp() const { return ctx->device->transport_type == IBV_TRANSPORT_IWARP; }
};

// Opens `name` (NULL and a reason in *why when it cannot).
std::unique_ptr<Device> open_device(const std::string& name, std::string* why);

// A registered buffer of `size` bytes.
struct Buffer {
  std::vector<uint8_t> bytes;
  ibv_mr* mr = nullptr;
};
std::unique_ptr<Buffer> make_buffer(Device& dev, std::size_t size,
                                    int access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
                                                 IBV_ACCESS_REMOTE_READ);

struct QpSpec {
  ibv_qp_type type = IBV_QPT_RC;
  ibv_cq* send_cq = nullptr;
  ibv_cq* recv_cq = nullptr;
  ibv_srq* srq = nullptr;
  uint32_t send_wr = 16;
  uint32_t recv_wr = 16;
  uint32_t send_sge = 1;
  uint32_t recv_sge = 1;
  uint32_t inline_data = 0;
};
// NULL on failure (errno set); *caps gets what the provider granted.
ibv_qp* create_qp(Device& dev, const QpSpec& spec, ibv_qp_cap* caps = nullptr);

// The RC knobs of a connection (ibv_modify_qp(3); IBA 9.7.5.2.8 and
// 9.7.6.1.3 for their encodings).
struct Link {
  uint8_t timeout = 14;  // 4.096 us * 2^14 = 67 ms
  uint8_t retry_cnt = 7;
  uint8_t rnr_retry = 7;      // 7: retry forever
  uint8_t min_rnr_timer = 1;  // 0.01 ms
};

// Minimal attribute masks of the RC transitions (IBA 10.3.1, the table in
// ibv_modify_qp(3)'s kernel counterpart ib_modify_qp_is_ok).
inline constexpr int kInitMask =
    IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS;
inline constexpr int kRtrMask = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
                                IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
inline constexpr int kRtsMask = IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
                                IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC;

// The attributes of the RC transition into `to` (everything a mask above
// may name), addressed to `remote_qpn` on the device itself.
ibv_qp_attr rc_attr(const Device& dev, ibv_qp_state to, uint32_t remote_qpn, const Link& link);

// Each returns 0 or the errno of ibv_modify_qp.
int to_init(Device& dev, ibv_qp* qp);
int to_rtr(Device& dev, ibv_qp* qp, uint32_t remote_qpn, const Link& link = {});
int to_rts(Device& dev, ibv_qp* qp, const Link& link = {});
int connect(Device& dev, ibv_qp* qp, uint32_t remote_qpn, const Link& link = {});
// Why a check whose peer must never answer (kept in INIT or RTR) cannot be
// set up on iWARP: a QP there reaches RTS only over a connection the
// iWARP CM establishes with a peer that accepts, and TCP, not retry_cnt,
// carries the retransmissions.
inline constexpr const char* kIwarpNeedsAnsweringPeer =
    "not applicable on iWARP: a QP reaches RTS only over a connection a peer accepted, so a "
    "peer that never answers cannot be set up";
// a and b connected to each other: connect() both ways, or on iWARP both
// in INIT and then connected by the rdma_cm (`link`s do not apply: TCP
// retransmits, iWARP has no RNR NAK). 0 or an errno; *why (when given)
// says which step failed.
int connect_pair(Device& dev, ibv_qp* a, ibv_qp* b, const Link& link_a = {},
                 const Link& link_b = {}, std::string* why = nullptr);
int to_state(ibv_qp* qp, ibv_qp_state state);  // IBV_QP_STATE only: RESET, ERR, SQD
// -1 when ibv_query_qp fails.
int qp_state(ibv_qp* qp);

// Work requests; each returns ibv_post_*'s result.
int post_send(ibv_qp* qp, ibv_wr_opcode opcode, const Buffer& local, uint32_t length,
              uint64_t wr_id, unsigned flags, const Buffer* remote = nullptr, uint32_t imm = 0);
int post_recv(ibv_qp* qp, const Buffer& local, uint32_t length, uint64_t wr_id);
int post_srq_recv(ibv_srq* srq, const Buffer& local, uint32_t length, uint64_t wr_id);

// What ibv_poll_cq gave within the bound: up to `want` completions, or
// the first negative return.
struct Polled {
  std::vector<ibv_wc> wcs;
  int error = 0;  // ibv_poll_cq's negative return, when one came
};
Polled poll_for(ibv_cq* cq, std::size_t want, int timeout_ms);

// Waits up to timeout_ms (poll(2) on the channel's fd) for a completion
// event and takes it with ibv_get_cq_event; the CQ it names, or NULL.
// The event is not acknowledged.
ibv_cq* wait_cq_event(ibv_comp_channel* channel, int timeout_ms, void** cq_context = nullptr);

// The async events of the context within timeout_ms (poll(2) on async_fd),
// stopping early once `done` says so; each is acknowledged unless keep_last
// (then the last one is returned unacknowledged, the others acked).
std::vector<ibv_async_event> collect_async(
    ibv_context* ctx, int timeout_ms,
    const std::function<bool(const ibv_async_event&)>& done = nullptr, bool keep_last = false);

// Milliseconds on the monotonic clock.
int64_t now_ms();
void sleep_ms(int ms);

}  // namespace verbfault::probe
