// Which fields of a work completion the provider fills. ibv_poll_cq(3):
// "If the completion status is other than IBV_WC_SUCCESS, only the
// following attributes are valid: wr_id, status, qp_num, and vendor_err."
// The probe fills the ibv_wc it passes with the byte 0x5a before polling,
// so each other field of an error completion reads either "untouched"
// (the provider left it) or what the provider wrote there: what an
// application that wrongly reads it gets on this provider.
//
// And for successful completions, the fields the man page makes valid:
// opcode, byte_len, imm_data with IBV_WC_WITH_IMM, and IBV_WC_GRH "valid
// only for UD QPs".
#include "areas.h"
#include "verbs_kit.h"

#include <cstring>
#include <type_traits>

namespace verbfault::probe {

namespace {

constexpr uint8_t kFill = 0x5a;

// Read as bytes, never as T: an undefined field may hold a value its type
// does not have (an opcode 0xa5a5a5a5), and loading that as an enum is
// undefined behaviour (UBSan).
template <typename T>
nlohmann::json field(const T& value) {
  static_assert(sizeof(T) == 1 || sizeof(T) == 2 || sizeof(T) == 4 || sizeof(T) == 8);
  using Raw = std::conditional_t<
      sizeof(T) == 1, uint8_t,
      std::conditional_t<sizeof(T) == 2, uint16_t,
                         std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>>>;
  Raw raw;
  std::memcpy(&raw, &value, sizeof raw);
  Raw fill;
  std::memset(&fill, kFill, sizeof fill);
  if (raw == fill) return "untouched";
  return static_cast<uint64_t>(raw);
}

// The fields ibv_poll_cq(3) leaves undefined in an error completion.
nlohmann::json undefined_fields(const ibv_wc& wc) {
  return {{"opcode", field(wc.opcode)},
          {"byte_len", field(wc.byte_len)},
          {"imm_data", field(wc.imm_data)},
          {"src_qp", field(wc.src_qp)},
          {"wc_flags", field(wc.wc_flags)},
          {"pkey_index", field(wc.pkey_index)},
          {"slid", field(wc.slid)},
          {"sl", field(wc.sl)},
          {"dlid_path_bits", field(wc.dlid_path_bits)}};
}

std::string fields_text(const nlohmann::json& fields) {
  std::string untouched, written;
  for (const auto& [key, value] : fields.items()) {
    if (value == "untouched")
      untouched += (untouched.empty() ? "" : ", ") + key;
    else
      written += (written.empty() ? "" : ", ") + key + "=" + value.dump();
  }
  return "untouched: " + (untouched.empty() ? "none" : untouched) +
         "; written: " + (written.empty() ? "none" : written);
}

// Polls one completion into a 0x5a-filled ibv_wc within the bound.
bool poll_one(ibv_cq* cq, ibv_wc* wc, int timeout_ms) {
  const int64_t deadline = now_ms() + timeout_ms;
  do {
    std::memset(wc, kFill, sizeof *wc);
    const int n = ibv_poll_cq(cq, 1, wc);
    if (n < 0) return false;
    if (n == 1) return true;
    timespec pause{0, 100000};
    nanosleep(&pause, nullptr);
  } while (now_ms() < deadline);
  return false;
}

void error_completion(CheckSink& sink, const std::string& what, const About& valid,
                      const About& others, ibv_cq* cq, ibv_qp* qp, uint64_t wr_id,
                      ibv_wc_status status) {
  ibv_wc wc;
  if (!poll_one(cq, &wc, kPositiveMs)) {
    sink.add(inconclusive(valid, "no " + what + " completion came"));
    sink.add(inconclusive(others, "no " + what + " completion came"));
    return;
  }
  const bool ok = wc.wr_id == wr_id && wc.status == status && wc.qp_num == qp->qp_num &&
                  field(wc.vendor_err) != "untouched";
  std::string observed = wc.wr_id == wr_id ? "wr_id right" : "wr_id wrong";
  observed += wc.status == status ? ", status " + wc_status_name(wc.status)
                                  : ", status " + wc_status_name(wc.status) + " (other)";
  observed += wc.qp_num == qp->qp_num ? ", qp_num right" : ", qp_num wrong";
  observed +=
      field(wc.vendor_err) == "untouched" ? ", vendor_err untouched" : ", vendor_err written";
  sink.add(judged(valid, ok, observed,
                  {{"wr_id", wc.wr_id == wr_id},
                   {"status", wc_status_name(wc.status)},
                   {"qp_num", wc.qp_num == qp->qp_num},
                   {"vendor_err", field(wc.vendor_err)}}));
  const nlohmann::json fields = undefined_fields(wc);
  // Undefined means anything goes: this check reports, it cannot deviate.
  sink.add(judged(others, true, fields_text(fields), fields));
}

}  // namespace

void probe_poison(const std::string& device, CheckSink& sink) {
  const std::string spec = "ibv_poll_cq(3)";
  const About flush_valid{"poison.flush_valid_fields",
                          "a receive flush completion: the four valid fields", spec,
                          "wr_id, status IBV_WC_WR_FLUSH_ERR, qp_num, vendor_err written"};
  const About flush_others{"poison.flush_other_fields",
                           "a receive flush completion: what the provider writes in the others",
                           spec, "undefined (reported as found)"};
  const About send_valid{"poison.send_error_valid_fields",
                         "an RNR-exhausted SEND's completion: the four valid fields", spec,
                         "wr_id, status IBV_WC_RNR_RETRY_EXC_ERR, qp_num, vendor_err written"};
  const About send_others{"poison.send_error_other_fields",
                          "an RNR-exhausted SEND's completion: what the provider writes in the "
                          "others",
                          spec, "undefined (reported as found)"};
  const About send_opcode{"poison.success_send_fields",
                          "a successful SEND_WITH_IMM's send completion: opcode, wc_flags",
                          spec + "; IBA 11.4.2.1 (immediate data is reported to the receiver)",
                          "opcode IBV_WC_SEND; IBV_WC_WITH_IMM not set"};
  const About recv_fields{"poison.success_recv_fields",
                          "a successful RC receive of SEND_WITH_IMM: opcode, byte_len, imm_data, "
                          "wc_flags",
                          spec + " (IBV_WC_GRH: \"valid only for UD QPs\")",
                          "IBV_WC_RECV, byte_len 24, imm_data as sent with IBV_WC_WITH_IMM, no "
                          "IBV_WC_GRH"};
  const About all[] = {flush_valid, flush_others, send_valid,
                       send_others, send_opcode,  recv_fields};

  std::string why;
  auto dev = open_device(device, &why);
  ibv_cq* cq_a = dev ? ibv_create_cq(dev->ctx, 64, nullptr, nullptr, 0) : nullptr;
  ibv_cq* cq_b = dev ? ibv_create_cq(dev->ctx, 64, nullptr, nullptr, 0) : nullptr;
  auto buffer = dev ? make_buffer(*dev, 256) : nullptr;
  ibv_qp* a = cq_a ? create_qp(*dev, {.send_cq = cq_a, .recv_cq = cq_a}) : nullptr;
  ibv_qp* b = cq_b ? create_qp(*dev, {.send_cq = cq_b, .recv_cq = cq_b}) : nullptr;
  if (a == nullptr || b == nullptr || !buffer || connect_pair(*dev, a, b) != 0) {
    for (const About& about : all)
      sink.add(inconclusive(about, dev ? "could not connect two RC QPs" : why));
    return;
  }

  // Success first, while both QPs are up: a SEND_WITH_IMM of 24 bytes.
  const uint32_t imm = 0x1234abcd;
  if (post_recv(b, *buffer, 256, 21) != 0 ||
      post_send(a, IBV_WR_SEND_WITH_IMM, *buffer, 24, 22, IBV_SEND_SIGNALED, nullptr, imm) != 0) {
    sink.add(inconclusive(send_opcode, "could not post"));
    sink.add(inconclusive(recv_fields, "could not post"));
  } else {
    ibv_wc sent, received;
    if (!poll_one(cq_a, &sent, kPositiveMs) || sent.status != IBV_WC_SUCCESS) {
      sink.add(inconclusive(send_opcode, "no successful send completion"));
    } else {
      const bool with_imm = (sent.wc_flags & IBV_WC_WITH_IMM) != 0;
      sink.add(judged(send_opcode, sent.opcode == IBV_WC_SEND && !with_imm,
                      wc_opcode_name(sent.opcode) +
                          (with_imm ? ", IBV_WC_WITH_IMM set" : ", IBV_WC_WITH_IMM not set"),
                      {{"opcode", wc_opcode_name(sent.opcode)}, {"with_imm", with_imm}}));
    }
    if (!poll_one(cq_b, &received, kPositiveMs) || received.status != IBV_WC_SUCCESS) {
      sink.add(inconclusive(recv_fields, "no successful receive completion"));
    } else {
      const bool with_imm = (received.wc_flags & IBV_WC_WITH_IMM) != 0;
      const bool grh = (received.wc_flags & IBV_WC_GRH) != 0;
      const bool imm_ok = with_imm && be32toh(received.imm_data) == imm;
      const bool ok = received.opcode == IBV_WC_RECV && received.byte_len == 24 && imm_ok && !grh;
      sink.add(judged(recv_fields, ok,
                      wc_opcode_name(received.opcode) + ", byte_len " +
                          std::to_string(received.byte_len) +
                          (imm_ok ? ", imm_data right" : ", imm_data wrong or flag missing") +
                          (grh ? ", IBV_WC_GRH set" : ", no IBV_WC_GRH"),
                      {{"opcode", wc_opcode_name(received.opcode)},
                       {"byte_len", received.byte_len},
                       {"imm", imm_ok},
                       {"grh", grh}}));
    }
  }

  // A receive flushed by ERR.
  if (post_recv(b, *buffer, 256, 31) != 0 || to_state(b, IBV_QPS_ERR) != 0) {
    sink.add(inconclusive(flush_valid, "could not post a receive and move to ERR"));
    sink.add(inconclusive(flush_others, "could not post a receive and move to ERR"));
  } else {
    error_completion(sink, "flush", flush_valid, flush_others, cq_b, b, 31, IBV_WC_WR_FLUSH_ERR);
  }

  // A SEND whose RNR retries run out: a fresh responder with no receive.
  ibv_cq* cq_c = ibv_create_cq(dev->ctx, 64, nullptr, nullptr, 0);
  ibv_qp* c = cq_c ? create_qp(*dev, {.send_cq = cq_c, .recv_cq = cq_c}) : nullptr;
  ibv_qp* d = cq_c ? create_qp(*dev, {.send_cq = cq_c, .recv_cq = cq_c}) : nullptr;
  if (c == nullptr || d == nullptr || connect_pair(*dev, c, d, {.rnr_retry = 0}) != 0 ||
      post_send(c, IBV_WR_SEND, *buffer, 16, 41, IBV_SEND_SIGNALED) != 0) {
    sink.add(inconclusive(send_valid, "could not set up an RNR exhaustion"));
    sink.add(inconclusive(send_others, "could not set up an RNR exhaustion"));
    return;
  }
  error_completion(sink, "RNR", send_valid, send_others, cq_c, c, 41, IBV_WC_RNR_RETRY_EXC_ERR);
}

}  // namespace verbfault::probe
