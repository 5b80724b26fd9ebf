// A connected RC pair on a simulated device, built inside a verbfault
// Session so that the objects get the names the rules use:
//   context#0, pd#0, channel#0 (with_channel), cq#0 (side a), cq#1 (side b),
//   qp#0 (a), qp#1 (b), mr#0 (a's buffer), mr#1 (b's buffer).
#pragma once

#include "channel_fixture.h"
#include "verbfault/session.h"

#include <memory>
#include <string>

namespace verbfault::testing {

class FaultPair : public ChannelRcPair {
 protected:
  void SetUp() override {}  // begin() builds everything, inside the session

  void TearDown() override {
    SimDevice::TearDown();
    session_.reset();
  }

  // Opens the session, then the device, and builds the pair.
  void begin(const std::string& rules, std::uint64_t seed = 1, bool with_channel = false) {
    session_ = std::make_unique<Session>(parse_rules(rules, "test"), seed);
    SimDevice::SetUp();
    if (HasFatalFailure()) return;
    if (with_channel) {
      channel_ = ibv_create_comp_channel(ctx_);
      ASSERT_NE(channel_, nullptr);
    }
    build_pair(channel_, &tag_a_, &tag_b_);
  }

  // A signaled SEND of 8 bytes from a to b.
  int send_a_to_b(uint64_t wr_id, unsigned flags = IBV_SEND_SIGNALED) {
    return post_send(a_, IBV_WR_SEND, wr_id, mr_a_, buf_a_, 8, flags);
  }
  int recv_on_b(uint64_t wr_id) { return post_recv(b_, wr_id, mr_b_, buf_b_, 64); }

  // The number of trace records that contain `text`.
  size_t records_with(const std::string& text) const {
    size_t n = 0;
    for (const std::string& record : session_->trace())
      if (record.find(text) != std::string::npos) ++n;
    return n;
  }

  std::unique_ptr<Session> session_;
};

}  // namespace verbfault::testing
