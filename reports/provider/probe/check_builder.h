// How an area turns what it saw into a Check (provider_report.h), and the
// sink the checks go to: one compact JSON line per check on a file
// descriptor, written as soon as the check is decided, so that the checks
// an area finished survive it if a later one hangs or crashes (main.cpp).
#pragma once

#include "bounded.h"

#include "provider_report.h"

#include <infiniband/verbs.h>

#include <string>

namespace verbfault::probe {

using provider_report::Check;
using provider_report::Verdict;

// What a check is, before it is run.
struct About {
  std::string id;
  std::string title;
  std::string spec;
  std::string expected;
};

class CheckSink {
 public:
  explicit CheckSink(int fd) : fd_(fd) {}
  void add(const Check& check);

 private:
  int fd_;
};

// ok: the observation matches the expected behaviour.
Check judged(const About& about, bool ok, std::string observed, nlohmann::json value,
             std::string note = "");
// `err`: 0 when the call succeeded, else its errno. Conforms when it is
// `expected_errno`; EOPNOTSUPP / ENOSYS are "unsupported".
Check errno_check(const About& about, int expected_errno, int err);
// The situation could not be set up: why.
Check inconclusive(const About& about, std::string why);

// A destroy run by run_bounded, whose child wrote "ready\n" once the object
// had an unacknowledged event and then the destroy's return value. The man
// pages say the destroy waits for the acks (ibv_get_cq_event(3),
// ibv_get_async_event(3)): it conforms when it was still blocked at the
// deadline. `no_event`: why it is inconclusive when the child never got ready.
Check destroy_with_unacked_event(const About& about, const Bounded& run,
                                 const std::string& no_event);

// Names for people and for the report's values.
std::string errno_name(int err);         // "EINVAL", "0" for success
std::string outcome(int err);            // "succeeds" / "fails with EINVAL"
std::string wc_status_name(int status);  // "IBV_WC_WR_FLUSH_ERR"
std::string wc_opcode_name(int opcode);  // "IBV_WC_SEND"
std::string event_name(int type);        // "IBV_EVENT_CQ_ERR"
std::string qp_state_name(int state);    // "RESET" ... "ERR", "?" for -1

}  // namespace verbfault::probe
