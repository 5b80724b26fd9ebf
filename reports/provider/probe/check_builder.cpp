#include "check_builder.h"

#include "provider_report_json.h"

#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <iterator>

namespace verbfault::probe {

void CheckSink::add(const Check& check) {
  const std::string line = provider_report::to_json_line(check);
  std::size_t done = 0;
  while (done < line.size()) {
    const ssize_t n = write(fd_, line.data() + done, line.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    done += static_cast<std::size_t>(n);
  }
}

Check judged(const About& about, bool ok, std::string observed, nlohmann::json value,
             std::string note) {
  return Check{about.id,
               about.title,
               about.spec,
               about.expected,
               std::move(observed),
               std::move(value),
               ok ? Verdict::conforms : Verdict::deviates,
               std::move(note)};
}

Check errno_check(const About& about, int expected_errno, int err) {
  Verdict verdict = err == expected_errno ? Verdict::conforms : Verdict::deviates;
  if (err == EOPNOTSUPP || err == ENOSYS) verdict = Verdict::unsupported;
  return Check{about.id,     about.title,     about.spec, about.expected,
               outcome(err), errno_name(err), verdict,    ""};
}

Check inconclusive(const About& about, std::string why) {
  return Check{about.id, about.title,           about.spec,    about.expected, "could not set up",
               nullptr,  Verdict::inconclusive, std::move(why)};
}

std::string errno_name(int err) {
  switch (err) {
    case 0:
      return "0";
    case EINVAL:
      return "EINVAL";
    case ENOMEM:
      return "ENOMEM";
    case EBUSY:
      return "EBUSY";
    case EFAULT:
      return "EFAULT";
    case EPERM:
      return "EPERM";
    case EACCES:
      return "EACCES";
    case EAGAIN:
      return "EAGAIN";
    case EIO:
      return "EIO";
    case ENOSYS:
      return "ENOSYS";
    case EOPNOTSUPP:
      return "EOPNOTSUPP";
    case ENOENT:
      return "ENOENT";
    case ENODEV:
      return "ENODEV";
    case ENOSPC:
      return "ENOSPC";
    case ETIMEDOUT:
      return "ETIMEDOUT";
    default:
      return "errno " + std::to_string(err);
  }
}

std::string outcome(int err) {
  return err == 0 ? "succeeds" : "fails with " + errno_name(err);
}

std::string wc_status_name(int status) {
  static const char* const names[] = {"IBV_WC_SUCCESS",
                                      "IBV_WC_LOC_LEN_ERR",
                                      "IBV_WC_LOC_QP_OP_ERR",
                                      "IBV_WC_LOC_EEC_OP_ERR",
                                      "IBV_WC_LOC_PROT_ERR",
                                      "IBV_WC_WR_FLUSH_ERR",
                                      "IBV_WC_MW_BIND_ERR",
                                      "IBV_WC_BAD_RESP_ERR",
                                      "IBV_WC_LOC_ACCESS_ERR",
                                      "IBV_WC_REM_INV_REQ_ERR",
                                      "IBV_WC_REM_ACCESS_ERR",
                                      "IBV_WC_REM_OP_ERR",
                                      "IBV_WC_RETRY_EXC_ERR",
                                      "IBV_WC_RNR_RETRY_EXC_ERR",
                                      "IBV_WC_LOC_RDD_VIOL_ERR",
                                      "IBV_WC_REM_INV_RD_REQ_ERR",
                                      "IBV_WC_REM_ABORT_ERR",
                                      "IBV_WC_INV_EECN_ERR",
                                      "IBV_WC_INV_EEC_STATE_ERR",
                                      "IBV_WC_FATAL_ERR",
                                      "IBV_WC_RESP_TIMEOUT_ERR",
                                      "IBV_WC_GENERAL_ERR",
                                      "IBV_WC_TM_ERR",
                                      "IBV_WC_TM_RNDV_INCOMPLETE"};
  if (status >= 0 && status < static_cast<int>(std::size(names))) return names[status];
  return "status " + std::to_string(status);
}

std::string wc_opcode_name(int opcode) {
  switch (opcode) {
    case IBV_WC_SEND:
      return "IBV_WC_SEND";
    case IBV_WC_RDMA_WRITE:
      return "IBV_WC_RDMA_WRITE";
    case IBV_WC_RDMA_READ:
      return "IBV_WC_RDMA_READ";
    case IBV_WC_COMP_SWAP:
      return "IBV_WC_COMP_SWAP";
    case IBV_WC_FETCH_ADD:
      return "IBV_WC_FETCH_ADD";
    case IBV_WC_RECV:
      return "IBV_WC_RECV";
    case IBV_WC_RECV_RDMA_WITH_IMM:
      return "IBV_WC_RECV_RDMA_WITH_IMM";
    default:
      return "opcode " + std::to_string(opcode);
  }
}

std::string event_name(int type) {
  static const char* const names[] = {"IBV_EVENT_CQ_ERR",
                                      "IBV_EVENT_QP_FATAL",
                                      "IBV_EVENT_QP_REQ_ERR",
                                      "IBV_EVENT_QP_ACCESS_ERR",
                                      "IBV_EVENT_COMM_EST",
                                      "IBV_EVENT_SQ_DRAINED",
                                      "IBV_EVENT_PATH_MIG",
                                      "IBV_EVENT_PATH_MIG_ERR",
                                      "IBV_EVENT_DEVICE_FATAL",
                                      "IBV_EVENT_PORT_ACTIVE",
                                      "IBV_EVENT_PORT_ERR",
                                      "IBV_EVENT_LID_CHANGE",
                                      "IBV_EVENT_PKEY_CHANGE",
                                      "IBV_EVENT_SM_CHANGE",
                                      "IBV_EVENT_SRQ_ERR",
                                      "IBV_EVENT_SRQ_LIMIT_REACHED",
                                      "IBV_EVENT_QP_LAST_WQE_REACHED",
                                      "IBV_EVENT_CLIENT_REREGISTER",
                                      "IBV_EVENT_GID_CHANGE",
                                      "IBV_EVENT_WQ_FATAL"};
  if (type >= 0 && type < static_cast<int>(std::size(names))) return names[type];
  return "event " + std::to_string(type);
}

std::string qp_state_name(int state) {
  switch (state) {
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

Check destroy_with_unacked_event(const About& about, const Bounded& run,
                                 const std::string& no_event) {
  const std::size_t ready = run.output.find("ready\n");
  const std::string after = ready == std::string::npos ? "" : run.output.substr(ready + 6);
  if (ready == std::string::npos || (!run.timed_out && after.empty()))
    return inconclusive(about, no_event);
  if (run.timed_out) return judged(about, true, "blocks (still waiting after 5 s)", "blocks");
  const int ret = std::atoi(after.c_str());
  return judged(about, false, "returns at once: " + outcome(ret), errno_name(ret),
                ret == EBUSY ? "a diagnosed failure where libibverbs would hang" : "");
}

}  // namespace verbfault::probe
