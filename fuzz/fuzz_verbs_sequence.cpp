// Random sequences of verbs calls on the simulated device (vfsim0), through
// the front door (<infiniband/verbs.h>, linked against libverbfault.so as a
// user's test is), with the harness off (the simulated provider only) or on
// (a verbfault::Session with fault rules drawn from the input), valid and
// invalid arguments alike.
//
// The input is a program: its first bytes choose the mode, the seed and the
// rules; then each byte picks a verb and the bytes after it its arguments
// (an exhausted input reads zeros). Every call's result is held to its man
// page's contract:
//   - int verbs (ibv_modify_qp(3), ibv_post_send(3), ibv_destroy_qp(3) ...):
//     0, or an errno value (positive, known to strerror);
//   - verbs returning a pointer (ibv_alloc_pd(3), ibv_create_cq(3) ...): an
//     object, or NULL with errno set;
//   - ibv_poll_cq(3): 0..num_entries completions (each of a WR this input
//     posted), or negative;
//   - ibv_get_cq_event(3): 0 with a CQ of this input, or -1 with errno set;
//   - posts that fail set *bad_wr to one of the WRs given;
//   - destroying an object still in use fails (EBUSY in libibverbs'
//     providers): a success would leave its users dangling.
// Nothing blocks: channels and the async fd are non-blocking and read only
// when poll(2) says they are readable. Everything is destroyed at the end of
// each input, so inputs do not leak into each other (LeakSanitizer).
#include "fuzz_check.h"
#include "verbfault/plan.h"
#include "verbfault/session.h"

#include <fcntl.h>
#include <infiniband/verbs.h>
#include <poll.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

namespace {

// Invalid arguments the fuzzer also makes (issue 16's defects 2, 3 and 4,
// fixed): each can be turned off here to look at the others alone.
//   kWildSgeCounts: num_sge beyond the SGE array, and a NULL sg_list.
//   kWildMemory: ibv_reg_mr of unmapped memory, SIZE_MAX or wrapping ranges.
//   kInvalidEnums: opcodes, QP states and QP types outside their enums.
constexpr bool kWildSgeCounts = true;
constexpr bool kWildMemory = true;
constexpr bool kInvalidEnums = true;

// Every verbs call this process made, printed at exit (the long run's figure).
std::atomic<std::uint64_t> g_calls{0};

// The input as a stream of arguments; zeros once it is exhausted.
class Input {
 public:
  Input(const std::uint8_t* data, std::size_t size) : data_(data), size_(size) {}
  bool done() const { return at_ >= size_; }
  std::uint8_t byte() { return at_ < size_ ? data_[at_++] : 0; }
  std::uint16_t u16() { return static_cast<std::uint16_t>(byte() | byte() << 8); }
  std::uint32_t u32() { return u16() | static_cast<std::uint32_t>(u16()) << 16; }
  std::uint64_t u64() { return u32() | static_cast<std::uint64_t>(u32()) << 32; }
  bool flip() { return byte() & 1; }
  // 0..n-1 (n > 0).
  std::size_t below(std::size_t n) { return byte() % n; }
  // A size: small mostly, sometimes at the edges (0, huge, negative as int).
  std::uint32_t size() {
    switch (byte() % 8) {
      case 0:
        return 0;
      case 1:
        return u32();
      case 2:
        return 0xffffffffu;
      case 3:
        return 1u << below(31);
      default:
        return byte() % 33;
    }
  }

 private:
  const std::uint8_t* data_;
  std::size_t size_;
  std::size_t at_ = 0;
};

// The memory the program registers and posts from.
constexpr std::size_t kBufferSize = 1 << 16;
alignas(4096) std::uint8_t g_buffer[kBufferSize];

// Rules a harness-on input may draw (the one-line form, docs/fault-kinds.md "Fault
// plans"), each with a trigger drawn beside it.
constexpr const char* kRules[] = {
    "flush",
    "cq_overflow",
    "rnr_retry_exhausted",
    "retry_exhausted",
    "completion_error(rem_access_err)",
    "completion_error(loc_len_err)",
    "spurious_cq_event",
    "drop_cq_event",
    "coalesce_cq_event",
    "async_event(qp_fatal)",
    "async_event(cq_err)",
    "async_event(srq_limit_reached)",
    "verb_failure(alloc_pd,ENOMEM)",
    "verb_failure(reg_mr,EFAULT)",
    "verb_failure(create_cq,ENOMEM)",
    "verb_failure(resize_cq,EINVAL)",
    "verb_failure(create_comp_channel,EMFILE)",
    "verb_failure(create_srq,ENOMEM)",
    "verb_failure(modify_srq,EINVAL)",
    "verb_failure(create_qp,ENOMEM)",
    "verb_failure(modify_qp,EINVAL)",
    "verb_failure(create_ah,EINVAL)",
    "verb_failure(post_send,ENOMEM)",
    "verb_failure(post_recv,ENOMEM)",
    "verb_failure(post_srq_recv,ENOMEM)",
    "verb_failure(req_notify_cq,EIO)",
    "verb_failure(poll_cq,EIO)",
    "delayed_completion(2)",
    "partial_poll",
    "port_down",
    "device_fatal",
};

std::string drawn_rules(Input& in) {
  std::string rules;
  const std::size_t n = 1 + in.below(3);
  for (std::size_t i = 0; i < n; ++i) {
    if (!rules.empty()) rules += ';';
    rules += kRules[in.below(std::size(kRules))];
    switch (in.below(4)) {
      case 0:
        rules += " nth=" + std::to_string(1 + in.below(8));
        break;
      case 1:
        rules += " every=" + std::to_string(1 + in.below(4));
        break;
      case 2:
        rules += " p=0.5";
        break;
      default:
        break;  // always
    }
  }
  return rules;
}

// ---- the contracts ------------------------------------------------------------------

bool known_errno(int error) {
  if (error <= 0 || error >= 4096) return false;
  const char* text = std::strerror(error);
  return text != nullptr && std::strncmp(text, "Unknown error", 13) != 0;
}

// An int verb that returns 0 or the value of errno.
int returns_errno(const char* verb, int ret) {
  ++g_calls;
  verbfault::fuzz::require(ret == 0 || known_errno(ret), verb,
                           "returned " + std::to_string(ret) + ": expected 0 or an errno value");
  return ret;
}

// A verb returning an object, or NULL with errno set. errno is cleared
// before the call (call_clearing_errno).
template <typename T>
T* returns_object(const char* verb, T* object) {
  ++g_calls;
  if (object == nullptr)
    verbfault::fuzz::require(known_errno(errno), verb,
                             "returned NULL with errno " + std::to_string(errno));
  return object;
}

// ---- the objects of one input -------------------------------------------------------

struct Cq {
  ibv_cq* cq = nullptr;
  int channel = -1;      // index in Program::channels_, -1: none
  unsigned unacked = 0;  // events taken and not yet acknowledged
};
struct Qp {
  ibv_qp* qp = nullptr;
  int pd, send_cq, recv_cq, srq;  // indexes, srq -1: none
  ibv_qp_type type;
};
struct Mr {
  ibv_mr* mr = nullptr;
  int pd;
};
struct Srq {
  ibv_srq* srq = nullptr;
  int pd;
};
struct Ah {
  ibv_ah* ah = nullptr;
  int pd;
};

constexpr std::size_t kMaxObjects = 4;  // per kind: enough for every relation

class Program {
 public:
  explicit Program(Input& in) : in_(in) {}
  ~Program() { close(); }

  bool open() {
    int n = 0;
    errno = 0;
    list_ = returns_object("ibv_get_device_list", ibv_get_device_list(&n));
    if (list_ == nullptr) return false;
    for (int i = 0; i < n; ++i)
      if (std::strcmp(ibv_get_device_name(list_[i]), "vfsim0") == 0) device_ = list_[i];
    verbfault::fuzz::require(device_ != nullptr, "vfsim0 listed");
    errno = 0;
    ctx_ = returns_object("ibv_open_device", ibv_open_device(device_));
    if (ctx_ == nullptr) return false;
    // The async fd is read only when readable, but non-blocking all the
    // same (ibv_get_async_event(3)): a wrong readiness must not hang.
    const int flags = fcntl(ctx_->async_fd, F_GETFL);
    verbfault::fuzz::require(flags >= 0 && fcntl(ctx_->async_fd, F_SETFL, flags | O_NONBLOCK) == 0,
                             "O_NONBLOCK on the async fd");
    return true;
  }

  void step() {
    switch (in_.below(26)) {
      case 0:
        alloc_pd();
        break;
      case 1:
        dealloc_pd();
        break;
      case 2:
        reg_mr();
        break;
      case 3:
        dereg_mr();
        break;
      case 4:
        create_channel();
        break;
      case 5:
        destroy_channel();
        break;
      case 6:
        create_cq();
        break;
      case 7:
        destroy_cq();
        break;
      case 8:
        resize_cq();
        break;
      case 9:
        create_srq();
        break;
      case 10:
        modify_srq();
        break;
      case 11:
        destroy_srq();
        break;
      case 12:
        create_qp();
        break;
      case 13:
      case 14:
        modify_qp();
        break;
      case 15:
        destroy_qp();
        break;
      case 16:
      case 17:
        post_send();
        break;
      case 18:
        post_recv();
        break;
      case 19:
        post_srq_recv();
        break;
      case 20:
      case 21:
        poll_cq();
        break;
      case 22:
        req_notify_cq();
        break;
      case 23:
        get_cq_event();
        break;
      case 24:
        queries();
        break;
      default:
        address_handles();
        break;
    }
  }

 private:
  template <typename T>
  static int pick(Input& in, const std::vector<T>& pool) {
    return pool.empty() ? -1 : static_cast<int>(in.below(pool.size()));
  }

  // ---- PD, MR --------------------------------------------------------------------
  void alloc_pd() {
    if (pds_.size() >= kMaxObjects) return;
    errno = 0;
    if (ibv_pd* pd = returns_object("ibv_alloc_pd", ibv_alloc_pd(ctx_))) pds_.push_back(pd);
  }
  bool pd_in_use(int pd) const {
    auto uses = [pd](const auto& pool) {
      return std::any_of(pool.begin(), pool.end(), [pd](const auto& o) { return o.pd == pd; });
    };
    return uses(mrs_) || uses(qps_) || uses(srqs_) || uses(ahs_);
  }
  void dealloc_pd() {
    const int i = pick(in_, pds_);
    if (i < 0) return;
    const bool in_use = pd_in_use(i);
    if (returns_errno("ibv_dealloc_pd", ibv_dealloc_pd(pds_[i])) != 0) return;
    verbfault::fuzz::require(!in_use, "ibv_dealloc_pd", "freed a PD still in use");
    erase_pd(i);
  }

  void reg_mr() {
    const int pd = pick(in_, pds_);
    if (pd < 0 || mrs_.size() >= kMaxObjects) return;
    std::size_t offset = in_.u16() % kBufferSize;
    std::size_t length = in_.u16() % (kBufferSize - offset + 1);
    void* address = g_buffer + offset;
    if (kWildMemory && in_.below(4) == 0) {
      // Memory no program has, or a range no kernel takes: NULL, pages
      // below mmap_min_addr, non-canonical addresses, the top page, or the
      // buffer with a length past the address space (wrapping at SIZE_MAX).
      // Not an address drawn at random: it may land in mapped memory that
      // is not the program's to register (AddressSanitizer's shadow, which
      // the device's instrumented copy may not touch: found by CI's run).
      constexpr std::uintptr_t kWild[] = {0,
                                          0x1000,
                                          0x8000,
                                          std::uintptr_t{1} << 47,
                                          ~std::uintptr_t{0} << 47,
                                          ~std::uintptr_t{0xfff}};
      address = in_.flip() ? g_buffer + offset
                           : reinterpret_cast<void*>(kWild[in_.below(std::size(kWild))]);
      length = in_.flip() ? SIZE_MAX : in_.u64() | (std::uint64_t{1} << 47);
    }
    // Any flags, valid or not (ibv_reg_mr(3): EINVAL for invalid ones).
    const int access = in_.flip() ? static_cast<int>(in_.u32())
                                  : IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
                                        IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;
    errno = 0;
    if (ibv_mr* mr = returns_object("ibv_reg_mr", ibv_reg_mr(pds_[pd], address, length, access)))
      mrs_.push_back({mr, pd});
  }
  void dereg_mr() {
    const int i = pick(in_, mrs_);
    if (i < 0) return;
    if (returns_errno("ibv_dereg_mr", ibv_dereg_mr(mrs_[i].mr)) == 0) mrs_.erase(mrs_.begin() + i);
  }

  // ---- completion channels and CQs -----------------------------------------------
  void create_channel() {
    if (channels_.size() >= kMaxObjects) return;
    errno = 0;
    ibv_comp_channel* channel =
        returns_object("ibv_create_comp_channel", ibv_create_comp_channel(ctx_));
    if (channel == nullptr) return;
    // ibv_get_cq_event(3): "non-blocking by changing the flags of the fd".
    const int flags = fcntl(channel->fd, F_GETFL);
    verbfault::fuzz::require(flags >= 0 && fcntl(channel->fd, F_SETFL, flags | O_NONBLOCK) == 0,
                             "O_NONBLOCK on a completion channel");
    channels_.push_back(channel);
  }
  void destroy_channel() {
    const int i = pick(in_, channels_);
    if (i < 0) return;
    const bool in_use =
        std::any_of(cqs_.begin(), cqs_.end(), [i](const Cq& cq) { return cq.channel == i; });
    if (returns_errno("ibv_destroy_comp_channel", ibv_destroy_comp_channel(channels_[i])) != 0)
      return;
    verbfault::fuzz::require(!in_use, "ibv_destroy_comp_channel", "freed a channel still in use");
    channels_.erase(channels_.begin() + i);
    for (Cq& cq : cqs_)
      if (cq.channel > i) --cq.channel;
  }

  void create_cq() {
    if (cqs_.size() >= kMaxObjects) return;
    const int cqe = static_cast<int>(in_.size());
    const int channel = in_.flip() ? pick(in_, channels_) : -1;
    const int vector = in_.flip() ? static_cast<int>(in_.u32()) : 0;
    errno = 0;
    ibv_cq* cq = returns_object(
        "ibv_create_cq",
        ibv_create_cq(ctx_, cqe, this, channel < 0 ? nullptr : channels_[channel], vector));
    if (cq != nullptr) cqs_.push_back({cq, channel, 0});
  }
  void destroy_cq() {
    const int i = pick(in_, cqs_);
    if (i < 0) return;
    const bool in_use = std::any_of(
        qps_.begin(), qps_.end(), [i](const Qp& qp) { return qp.send_cq == i || qp.recv_cq == i; });
    // A destroy with unacknowledged events fails with EBUSY after the
    // device's second of patience while another thread might still ack
    // (provider.cpp check_unacked_events), and libFuzzer's RSS thread is one:
    // once a unit is enough to check it, more would only outlast -timeout.
    if (cqs_[i].unacked != 0) {
      if (tried_unacked_destroy_) return;
      tried_unacked_destroy_ = true;
    }
    if (returns_errno("ibv_destroy_cq", ibv_destroy_cq(cqs_[i].cq)) != 0) return;
    verbfault::fuzz::require(!in_use, "ibv_destroy_cq", "freed a CQ still in use");
    // VERBFAULT_DESTROY_CQ_UNACKED=fail (set at start): EBUSY, not libibverbs'
    // endless wait.
    verbfault::fuzz::require(cqs_[i].unacked == 0, "ibv_destroy_cq",
                             "freed a CQ with unacknowledged events");
    cqs_.erase(cqs_.begin() + i);
    for (Qp& qp : qps_) {
      if (qp.send_cq > i) --qp.send_cq;
      if (qp.recv_cq > i) --qp.recv_cq;
    }
  }
  void resize_cq() {
    const int i = pick(in_, cqs_);
    if (i < 0) return;
    returns_errno("ibv_resize_cq", ibv_resize_cq(cqs_[i].cq, static_cast<int>(in_.size())));
  }

  // ---- SRQs ----------------------------------------------------------------------
  void create_srq() {
    const int pd = pick(in_, pds_);
    if (pd < 0 || srqs_.size() >= kMaxObjects) return;
    ibv_srq_init_attr init{};
    init.attr.max_wr = in_.size();
    init.attr.max_sge = in_.size();
    init.attr.srq_limit = in_.size();
    errno = 0;
    if (ibv_srq* srq = returns_object("ibv_create_srq", ibv_create_srq(pds_[pd], &init)))
      srqs_.push_back({srq, pd});
  }
  void modify_srq() {
    const int i = pick(in_, srqs_);
    if (i < 0) return;
    ibv_srq_attr attr{};
    if (in_.flip()) {
      returns_errno("ibv_query_srq", ibv_query_srq(srqs_[i].srq, &attr));
      return;
    }
    attr.max_wr = in_.size();
    attr.srq_limit = in_.size();
    returns_errno("ibv_modify_srq", ibv_modify_srq(srqs_[i].srq, &attr, in_.byte() & 0x7));
  }
  void destroy_srq() {
    const int i = pick(in_, srqs_);
    if (i < 0) return;
    const bool in_use =
        std::any_of(qps_.begin(), qps_.end(), [i](const Qp& qp) { return qp.srq == i; });
    if (returns_errno("ibv_destroy_srq", ibv_destroy_srq(srqs_[i].srq)) != 0) return;
    verbfault::fuzz::require(!in_use, "ibv_destroy_srq", "freed an SRQ still in use");
    srqs_.erase(srqs_.begin() + i);
    for (Qp& qp : qps_)
      if (qp.srq > i) --qp.srq;
  }

  // ---- QPs -----------------------------------------------------------------------
  ibv_qp_type qp_type() {
    constexpr ibv_qp_type kTypes[] = {IBV_QPT_RC, IBV_QPT_RC, IBV_QPT_UC, IBV_QPT_UD,
                                      IBV_QPT_RAW_PACKET};
    if (kInvalidEnums && in_.below(8) == 0) return static_cast<ibv_qp_type>(in_.byte());
    return kTypes[in_.below(std::size(kTypes))];
  }
  void create_qp() {
    const int pd = pick(in_, pds_);
    const int send_cq = pick(in_, cqs_), recv_cq = pick(in_, cqs_);
    if (pd < 0 || send_cq < 0 || recv_cq < 0 || qps_.size() >= kMaxObjects) return;
    const int srq = in_.below(4) == 0 ? pick(in_, srqs_) : -1;
    ibv_qp_init_attr init{};
    init.qp_context = this;
    init.send_cq = cqs_[send_cq].cq;
    init.recv_cq = cqs_[recv_cq].cq;
    init.srq = srq < 0 ? nullptr : srqs_[srq].srq;
    init.qp_type = qp_type();
    init.sq_sig_all = in_.flip();
    init.cap.max_send_wr = in_.size();
    init.cap.max_recv_wr = in_.size();
    init.cap.max_send_sge = in_.size();
    init.cap.max_recv_sge = in_.size();
    init.cap.max_inline_data = in_.size();
    errno = 0;
    if (ibv_qp* qp = returns_object("ibv_create_qp", ibv_create_qp(pds_[pd], &init)))
      qps_.push_back({qp, pd, send_cq, recv_cq, srq, init.qp_type});
  }
  // As an integer, as opcode().
  int qp_state() {
    if (kInvalidEnums && in_.below(8) == 0) return in_.byte();
    return static_cast<int>(in_.below(IBV_QPS_ERR + 1));
  }
  void address(ibv_ah_attr& ah) {
    ibv_port_attr port{};
    ++g_calls;
    if (ibv_query_port(ctx_, 1, &port) == 0 && in_.flip())
      ah.dlid = port.lid;
    else
      ah.dlid = in_.u16();
    ah.sl = in_.byte() & 0xf;
    ah.src_path_bits = in_.byte() & 0x7f;
    ah.static_rate = in_.byte() & 0x1f;
    ah.port_num = in_.below(4) == 0 ? in_.byte() : 1;
    ah.is_global = in_.flip();
    ah.grh.sgid_index = in_.byte();
    ah.grh.hop_limit = in_.byte();
    for (int i = 0; i < 16; ++i) ah.grh.dgid.raw[i] = in_.below(4) == 0 ? in_.byte() : 0;
  }
  void modify_qp() {
    const int i = pick(in_, qps_);
    if (i < 0) return;
    ibv_qp_attr attr{};
    int mask = in_.flip() ? static_cast<int>(in_.u32() & ((1 << 21) - 1)) : IBV_QP_STATE;
    // The state is switched on as the integer drawn: an invalid one
    // (kInvalidEnums) is no ibv_qp_state, and a load of it as one is
    // undefined (UBSan).
    const int target_state = qp_state();
    attr.qp_state = static_cast<ibv_qp_state>(target_state);
    attr.cur_qp_state = static_cast<ibv_qp_state>(qp_state());
    attr.path_mtu = static_cast<ibv_mtu>(IBV_MTU_256 + in_.below(5));
    attr.path_mig_state = static_cast<ibv_mig_state>(in_.below(IBV_MIG_ARMED + 1));
    attr.qkey = in_.u32();
    attr.rq_psn = in_.u32();
    attr.sq_psn = in_.u32();
    // A peer of this input mostly, so that RC traffic can flow.
    const int peer = pick(in_, qps_);
    attr.dest_qp_num = peer >= 0 && in_.flip() ? qps_[peer].qp->qp_num : in_.u32();
    attr.qp_access_flags = in_.byte();
    attr.cap.max_send_wr = in_.size();
    attr.cap.max_recv_wr = in_.size();
    address(attr.ah_attr);
    address(attr.alt_ah_attr);
    attr.pkey_index = in_.below(4) == 0 ? in_.u16() : 0;
    attr.alt_pkey_index = in_.u16();
    attr.en_sqd_async_notify = in_.flip();
    attr.max_rd_atomic = in_.byte();
    attr.max_dest_rd_atomic = in_.byte();
    attr.min_rnr_timer = in_.byte();
    attr.port_num = in_.below(4) == 0 ? in_.byte() : 1;
    attr.timeout = in_.byte();
    attr.retry_cnt = in_.byte();
    attr.rnr_retry = in_.byte();
    attr.alt_port_num = in_.byte();
    attr.alt_timeout = in_.byte();
    attr.rate_limit = in_.u32();
    // The canonical masks of each transition (ibv_modify_qp(3)) now and
    // then, so that QPs reach RTS and traffic flows.
    if (in_.below(3) == 0) {
      switch (target_state) {
        case IBV_QPS_INIT:
          mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
                 (qps_[i].type == IBV_QPT_UD ? IBV_QP_QKEY : IBV_QP_ACCESS_FLAGS);
          break;
        case IBV_QPS_RTR:
          mask = qps_[i].type == IBV_QPT_UD
                     ? IBV_QP_STATE
                     : IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
                           IBV_QP_RQ_PSN |
                           (qps_[i].type == IBV_QPT_RC
                                ? IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER
                                : 0);
          break;
        case IBV_QPS_RTS:
          mask = IBV_QP_STATE | IBV_QP_SQ_PSN |
                 (qps_[i].type == IBV_QPT_RC ? IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
                                                   IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC
                                             : 0);
          break;
        default:
          break;
      }
    }
    if (in_.below(8) == 0) {
      ibv_qp_init_attr init{};
      returns_errno("ibv_query_qp", ibv_query_qp(qps_[i].qp, &attr, mask, &init));
      return;
    }
    returns_errno("ibv_modify_qp", ibv_modify_qp(qps_[i].qp, &attr, mask));
  }
  void destroy_qp() {
    const int i = pick(in_, qps_);
    if (i < 0) return;
    if (returns_errno("ibv_destroy_qp", ibv_destroy_qp(qps_[i].qp)) == 0)
      qps_.erase(qps_.begin() + i);
  }

  // ---- posts and completions ------------------------------------------------------
  static constexpr int kMaxSge = 4;
  static constexpr int kMaxWrs = 3;

  // SGEs in the buffer mostly, under one of this input's MRs or a wild key.
  int sges(ibv_sge* list) {
    const int n = static_cast<int>(in_.below(kMaxSge + 1));
    for (int s = 0; s < n; ++s) {
      const std::size_t offset = in_.u16() % kBufferSize;
      list[s].addr = reinterpret_cast<std::uintptr_t>(g_buffer + offset);
      list[s].length = in_.below(4) == 0 ? in_.u32() : in_.u16() % (kBufferSize - offset + 1);
      const int mr = pick(in_, mrs_);
      list[s].lkey = mr >= 0 && in_.below(4) != 0 ? mrs_[mr].mr->lkey : in_.u32();
    }
    return n;
  }
  int num_sge(int built) {
    if (kWildSgeCounts && in_.below(8) == 0) return static_cast<int>(in_.u32());
    return built;
  }
  // As the integer a WR holds: an invalid one (kInvalidEnums) is no
  // ibv_wr_opcode, and a load of it as one is undefined (UBSan).
  std::uint32_t opcode() {
    // BIND_MW and TSO carry pointers of their own (a MW, a header): not drawn.
    constexpr ibv_wr_opcode kOpcodes[] = {IBV_WR_SEND,
                                          IBV_WR_SEND_WITH_IMM,
                                          IBV_WR_RDMA_WRITE,
                                          IBV_WR_RDMA_WRITE_WITH_IMM,
                                          IBV_WR_RDMA_READ,
                                          IBV_WR_ATOMIC_CMP_AND_SWP,
                                          IBV_WR_ATOMIC_FETCH_AND_ADD,
                                          IBV_WR_LOCAL_INV,
                                          IBV_WR_SEND_WITH_INV};
    if (kInvalidEnums && in_.below(8) == 0) return in_.byte();
    return kOpcodes[in_.below(std::size(kOpcodes))];
  }
  template <typename Wr>
  static void require_bad_wr(const char* verb, int ret, Wr* wrs, int n, Wr* bad) {
    if (ret == 0) return;
    verbfault::fuzz::require(bad >= wrs && bad < wrs + n, verb,
                             "returned " + std::to_string(ret) + " with bad_wr " +
                                 (bad == nullptr ? "NULL" : "not one of the WRs"));
  }

  void post_send() {
    const int i = pick(in_, qps_);
    if (i < 0) return;
    ibv_send_wr wrs[kMaxWrs]{};
    ibv_sge sge[kMaxWrs][kMaxSge]{};
    const int n = 1 + static_cast<int>(in_.below(kMaxWrs));
    for (int w = 0; w < n; ++w) {
      ibv_send_wr& wr = wrs[w];
      wr.wr_id = next_wr_id_++;
      wr.next = w + 1 < n ? &wrs[w + 1] : nullptr;
      wr.sg_list = sge[w];
      wr.num_sge = num_sge(sges(sge[w]));
      if (kWildSgeCounts && in_.below(16) == 0) wr.sg_list = nullptr;
      const std::uint32_t raw_opcode = opcode();
      wr.opcode = static_cast<ibv_wr_opcode>(raw_opcode);
      wr.send_flags = in_.flip() ? in_.byte() & 0x1f : IBV_SEND_SIGNALED;
      wr.imm_data = in_.u32();
      const int mr = pick(in_, mrs_);
      const bool at_mr = mr >= 0 && in_.below(4) != 0;
      const std::uint64_t remote =
          at_mr ? reinterpret_cast<std::uintptr_t>(mrs_[mr].mr->addr) + in_.below(64) : in_.u64();
      const std::uint32_t rkey = at_mr ? mrs_[mr].mr->rkey : in_.u32();
      if (raw_opcode == IBV_WR_ATOMIC_CMP_AND_SWP || raw_opcode == IBV_WR_ATOMIC_FETCH_AND_ADD) {
        wr.wr.atomic.remote_addr = remote & ~std::uint64_t(in_.flip() ? 7 : 0);
        wr.wr.atomic.rkey = rkey;
        wr.wr.atomic.compare_add = in_.u64();
        wr.wr.atomic.swap = in_.u64();
      } else {
        wr.wr.rdma.remote_addr = remote;
        wr.wr.rdma.rkey = rkey;
      }
      if (qps_[i].type == IBV_QPT_UD) {
        // wr.ud.ah is a pointer: an AH of this input's, or none posted.
        const int ah = pick(in_, ahs_);
        if (ah < 0) return;
        wr.wr.ud.ah = ahs_[ah].ah;
        const int peer = pick(in_, qps_);
        wr.wr.ud.remote_qpn = peer >= 0 && in_.flip() ? qps_[peer].qp->qp_num : in_.u32();
        wr.wr.ud.remote_qkey = in_.u32();
      }
    }
    ibv_send_wr* bad = nullptr;
    const int ret = returns_errno("ibv_post_send", ibv_post_send(qps_[i].qp, wrs, &bad));
    require_bad_wr("ibv_post_send", ret, wrs, n, bad);
  }

  // Receive WRs for a QP or an SRQ.
  int recv_wrs(ibv_recv_wr* wrs, ibv_sge (*sge)[kMaxSge]) {
    const int n = 1 + static_cast<int>(in_.below(kMaxWrs));
    for (int w = 0; w < n; ++w) {
      wrs[w].wr_id = next_wr_id_++;
      wrs[w].next = w + 1 < n ? &wrs[w + 1] : nullptr;
      wrs[w].sg_list = sge[w];
      wrs[w].num_sge = num_sge(sges(sge[w]));
      if (kWildSgeCounts && in_.below(16) == 0) wrs[w].sg_list = nullptr;
    }
    return n;
  }
  void post_recv() {
    const int i = pick(in_, qps_);
    if (i < 0) return;
    ibv_recv_wr wrs[kMaxWrs]{};
    ibv_sge sge[kMaxWrs][kMaxSge]{};
    const int n = recv_wrs(wrs, sge);
    ibv_recv_wr* bad = nullptr;
    const int ret = returns_errno("ibv_post_recv", ibv_post_recv(qps_[i].qp, wrs, &bad));
    require_bad_wr("ibv_post_recv", ret, wrs, n, bad);
  }
  void post_srq_recv() {
    const int i = pick(in_, srqs_);
    if (i < 0) return;
    ibv_recv_wr wrs[kMaxWrs]{};
    ibv_sge sge[kMaxWrs][kMaxSge]{};
    const int n = recv_wrs(wrs, sge);
    ibv_recv_wr* bad = nullptr;
    const int ret = returns_errno("ibv_post_srq_recv", ibv_post_srq_recv(srqs_[i].srq, wrs, &bad));
    require_bad_wr("ibv_post_srq_recv", ret, wrs, n, bad);
  }

  void poll_cq() {
    const int i = pick(in_, cqs_);
    if (i < 0) return;
    constexpr int kMaxEntries = 16;
    ibv_wc wc[kMaxEntries];
    const int entries = static_cast<int>(in_.below(kMaxEntries + 1));
    const int n = ibv_poll_cq(cqs_[i].cq, entries, wc);
    ++g_calls;
    verbfault::fuzz::require(n <= entries, "ibv_poll_cq", "more completions than asked for");
    for (int k = 0; k < n; ++k)
      verbfault::fuzz::require(
          wc[k].wr_id < next_wr_id_, "ibv_poll_cq",
          "a completion of a WR never posted: wr_id " + std::to_string(wc[k].wr_id));
  }
  void req_notify_cq() {
    const int i = pick(in_, cqs_);
    if (i < 0) return;
    returns_errno("ibv_req_notify_cq", ibv_req_notify_cq(cqs_[i].cq, in_.flip()));
  }

  static bool readable(int fd) {
    pollfd p{fd, POLLIN, 0};
    return ::poll(&p, 1, 0) == 1 && (p.revents & POLLIN) != 0;
  }
  void get_cq_event() {
    const int c = pick(in_, channels_);
    if (c >= 0) {
      // Readable or not: the fd is non-blocking, so -1 with EAGAIN at worst.
      ibv_cq* cq = nullptr;
      void* context = nullptr;
      errno = 0;
      const int ret = ibv_get_cq_event(channels_[c], &cq, &context);
      ++g_calls;
      if (ret == 0) {
        auto it = std::find_if(cqs_.begin(), cqs_.end(), [cq](const Cq& o) { return o.cq == cq; });
        verbfault::fuzz::require(it != cqs_.end() && it->channel == c && context == this,
                                 "ibv_get_cq_event", "an event of a CQ not on this channel");
        ++it->unacked;
      } else {
        verbfault::fuzz::require(
            ret == -1 && known_errno(errno), "ibv_get_cq_event",
            "returned " + std::to_string(ret) + " errno " + std::to_string(errno));
      }
    }
    // Acknowledge some of a CQ's events (ibv_ack_cq_events(3)), or an
    // async event that is waiting.
    const int i = pick(in_, cqs_);
    if (i >= 0 && cqs_[i].unacked > 0) {
      const unsigned n = 1 + static_cast<unsigned>(in_.below(cqs_[i].unacked));
      ibv_ack_cq_events(cqs_[i].cq, n);
      ++g_calls;
      cqs_[i].unacked -= n;
    }
    if (readable(ctx_->async_fd)) {
      ibv_async_event event{};
      errno = 0;
      const int ret = ibv_get_async_event(ctx_, &event);
      ++g_calls;
      if (ret == 0) {
        ibv_ack_async_event(&event);
        ++g_calls;
      } else {
        verbfault::fuzz::require(ret == -1 && known_errno(errno), "ibv_get_async_event",
                                 "returned " + std::to_string(ret));
      }
    }
  }

  // ---- queries and address handles ------------------------------------------------
  void queries() {
    switch (in_.below(4)) {
      case 0: {
        ibv_device_attr attr{};
        returns_errno("ibv_query_device", ibv_query_device(ctx_, &attr));
        break;
      }
      case 1: {
        ibv_port_attr attr{};
        returns_errno("ibv_query_port", ibv_query_port(ctx_, in_.byte(), &attr));
        break;
      }
      case 2: {
        ibv_gid gid{};
        ++g_calls;
        const int ret = ibv_query_gid(ctx_, in_.byte(), in_.byte(), &gid);
        verbfault::fuzz::require(ret == 0 || ret == -1, "ibv_query_gid", std::to_string(ret));
        break;
      }
      default: {
        __be16 pkey = 0;
        ++g_calls;
        const int ret = ibv_query_pkey(ctx_, in_.byte(), in_.u16(), &pkey);
        verbfault::fuzz::require(ret == 0 || ret == -1, "ibv_query_pkey", std::to_string(ret));
        break;
      }
    }
  }
  void address_handles() {
    if (in_.flip()) {
      const int i = pick(in_, ahs_);
      if (i < 0) return;
      if (returns_errno("ibv_destroy_ah", ibv_destroy_ah(ahs_[i].ah)) == 0)
        ahs_.erase(ahs_.begin() + i);
      return;
    }
    const int pd = pick(in_, pds_);
    if (pd < 0 || ahs_.size() >= kMaxObjects) return;
    ibv_ah_attr attr{};
    address(attr);
    errno = 0;
    if (ibv_ah* ah = returns_object("ibv_create_ah", ibv_create_ah(pds_[pd], &attr)))
      ahs_.push_back({ah, pd});
  }

  // Removes PD i and renumbers the PD indexes of the objects after it.
  void erase_pd(int i) {
    pds_.erase(pds_.begin() + i);
    auto renumber = [i](auto& users) {
      for (auto& o : users)
        if (o.pd > i) --o.pd;
    };
    renumber(mrs_);
    renumber(qps_);
    renumber(srqs_);
    renumber(ahs_);
  }

  // Everything this input created, users before what they use
  // (ibv_close_device(3): resources are not released by closing it).
  void close() {
    for (Qp& qp : qps_) returns_errno("ibv_destroy_qp (end)", ibv_destroy_qp(qp.qp));
    for (Srq& srq : srqs_) returns_errno("ibv_destroy_srq (end)", ibv_destroy_srq(srq.srq));
    for (Ah& ah : ahs_) returns_errno("ibv_destroy_ah (end)", ibv_destroy_ah(ah.ah));
    for (Mr& mr : mrs_) returns_errno("ibv_dereg_mr (end)", ibv_dereg_mr(mr.mr));
    for (Cq& cq : cqs_) {
      if (cq.unacked > 0) ibv_ack_cq_events(cq.cq, cq.unacked);
      returns_errno("ibv_destroy_cq (end)", ibv_destroy_cq(cq.cq));
    }
    for (ibv_comp_channel* channel : channels_)
      returns_errno("ibv_destroy_comp_channel (end)", ibv_destroy_comp_channel(channel));
    for (ibv_pd* pd : pds_) returns_errno("ibv_dealloc_pd (end)", ibv_dealloc_pd(pd));
    qps_.clear(), srqs_.clear(), ahs_.clear(), mrs_.clear(), cqs_.clear(), channels_.clear(),
        pds_.clear();
    if (ctx_ != nullptr) returns_errno("ibv_close_device", ibv_close_device(ctx_));
    ctx_ = nullptr;
    if (list_ != nullptr) ibv_free_device_list(list_);
    list_ = nullptr;
  }

  Input& in_;
  ibv_device** list_ = nullptr;
  ibv_device* device_ = nullptr;
  ibv_context* ctx_ = nullptr;
  std::vector<ibv_pd*> pds_;
  std::vector<Mr> mrs_;
  std::vector<ibv_comp_channel*> channels_;
  std::vector<Cq> cqs_;
  bool tried_unacked_destroy_ = false;  // destroy_cq of a CQ with unacked events, once a unit
  std::vector<Srq> srqs_;
  std::vector<Qp> qps_;
  std::vector<Ah> ahs_;
  std::uint64_t next_wr_id_ = 0;
};

void print_calls() {
  std::fprintf(stderr, "fuzz_verbs_sequence: %llu verbs calls\n",
               static_cast<unsigned long long>(g_calls.load()));
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  // Read when the harness first starts (the first verbs call), so set here:
  // the liveness checks end a program that polls an empty CQ forever or
  // posts to a QP in ERR, which is what a fuzzer does on purpose; a CQ
  // destroyed with unacknowledged events fails with EBUSY, never waits forever.
  setenv("VERBFAULT_CHECKS", "-liveness.*", 1);
  setenv("VERBFAULT_DESTROY_CQ_UNACKED", "fail", 1);
  setenv("VERBFAULT_SIM_DEVICES", "1", 1);
  std::atexit(print_calls);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  Input in(data, size);
  // Harness on: a session with 1..3 rules drawn from the input and a seed.
  std::unique_ptr<verbfault::Session> session;
  if (in.flip()) {
    const std::string rules = drawn_rules(in);
    session = std::make_unique<verbfault::Session>(verbfault::parse_rules(rules, "fuzz"), in.u64());
  }
  {
    Program program(in);
    if (program.open()) {
      // At most this many calls per input: an input is a short program.
      for (int steps = 0; steps < 256 && !in.done(); ++steps) program.step();
    }
  }
  return 0;
}
