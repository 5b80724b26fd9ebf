// GoogleMock matchers for what a verbs program observes, for users' own
// tests (header-only; include after <gmock/gmock.h> is available):
//
//   EXPECT_THAT(wc, verbfault::WcIs(IBV_WC_SUCCESS, IBV_WC_RECV));
//   EXPECT_THAT(completions, ElementsAre(WcWithId(1), verbfault::IsFlushed()));
//   EXPECT_THAT(event, verbfault::AsyncEventIs(IBV_EVENT_QP_FATAL));
//   EXPECT_THAT(session.findings(), Contains(verbfault::FindingOf("ack.cq_events_overacked")));
//   EXPECT_THAT(findings, Contains(verbfault::FindingOn("liveness.hang", "channel#0")));
//
// Error completions define only wr_id, status, qp_num and vendor_err
// (ibv_poll_cq(3)): WcIs with an opcode matches only successful ones.
#pragma once

#include "verbfault/session.h"

#include <infiniband/verbs.h>

#include <gmock/gmock.h>

#include <ostream>

namespace verbfault {

MATCHER_P(WcStatusIs, status,
          std::string(negation ? "is not" : "is") + " a completion with status " +
              ibv_wc_status_str(status)) {
  *result_listener << "status " << ibv_wc_status_str(arg.status);
  return arg.status == status;
}

MATCHER_P(WcWithId, wr_id, "is a completion of wr_id " + ::testing::PrintToString(wr_id)) {
  *result_listener << "wr_id " << arg.wr_id;
  return arg.wr_id == static_cast<std::uint64_t>(wr_id);
}

MATCHER_P2(WcIs, status, opcode,
           std::string("is a completion with status ") + ibv_wc_status_str(status) +
               " and opcode " + ::testing::PrintToString(static_cast<int>(opcode))) {
  *result_listener << "status " << ibv_wc_status_str(arg.status);
  if (arg.status != status) return false;
  *result_listener << ", opcode " << static_cast<int>(arg.opcode);
  return arg.status == IBV_WC_SUCCESS ? arg.opcode == opcode : true;
}

MATCHER(IsFlushed, "is a flushed completion (IBV_WC_WR_FLUSH_ERR)") {
  *result_listener << "status " << ibv_wc_status_str(arg.status);
  return arg.status == IBV_WC_WR_FLUSH_ERR;
}

MATCHER(IsSuccess, "is a successful completion") {
  *result_listener << "status " << ibv_wc_status_str(arg.status);
  return arg.status == IBV_WC_SUCCESS;
}

MATCHER_P(AsyncEventIs, type, std::string("is the async event ") + ibv_event_type_str(type)) {
  *result_listener << "event " << ibv_event_type_str(arg.event_type);
  return arg.event_type == type;
}

MATCHER_P(FindingOf, check, "is a finding of the check " + std::string(check)) {
  *result_listener << "check " << arg.check << " on " << arg.object;
  return arg.check == check;
}

MATCHER_P2(FindingOn, check, object,
           "is a finding of the check " + std::string(check) + " on " + std::string(object)) {
  *result_listener << "check " << arg.check << " on " << arg.object;
  return arg.check == check && arg.object == object;
}

}  // namespace verbfault

// How gtest prints a work completion in a failure message.
inline void PrintTo(const ibv_wc& wc, std::ostream* out) {
  *out << "{wr_id " << wc.wr_id << ", " << ibv_wc_status_str(wc.status);
  if (wc.status == IBV_WC_SUCCESS) *out << ", opcode " << wc.opcode << ", byte_len " << wc.byte_len;
  *out << ", qp_num " << wc.qp_num << "}";
}

namespace verbfault {
inline void PrintTo(const Finding& finding, std::ostream* out) {
  *out << finding.check << " on " << finding.object << ": " << finding.message;
}
}  // namespace verbfault
