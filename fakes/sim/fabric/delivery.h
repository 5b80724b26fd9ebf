// What another process's frames leave for a completion queue of this one,
// held until the application's own calls reveal it (docs/local-fabric.md,
// "Determinism across processes").
//
// A frame arrives whenever the other process and the wire get it here; if
// its effect showed at once, how many polls came back empty before it, and
// whether one poll saw it together with another, would follow the wall
// clock. So the effects an application sees through a CQ wait in the CQ,
// in arrival order (frames of one member arrive in the order it sent them),
// and a poll that finds nothing visible reveals the next one
// (fabric_wait.h).
#pragma once

#include "completion.h"
#include "transport.h"

#include <cstdint>
#include <vector>

namespace verbfault::sim {

struct Delivery {
  enum class Kind : uint8_t {
    // A receive completion the responder made when the frame arrived (the
    // data is in place, the receive WR taken, the sender answered).
    kCompletion,
    // Another process's answer to a request of a QP that completes into
    // this CQ: applied by the requester when revealed (remote.cpp).
    kAnswer,
  };
  Kind kind = Kind::kCompletion;
  // Whether revealing it makes a completion (an ACK of a signaled WR, an
  // error, a receive): what a CQ armed before the reveal owes an event for.
  bool completes = true;
  Completion completion;  // kCompletion
  // kAnswer: the answer to request `psn` of QP `qpn`; with `to_front`, to
  // whatever request is oldest in flight when it is applied (the member it
  // went to is gone: nothing answers any of them, IBA 9.7.6.1.3).
  uint32_t qpn = 0;
  uint32_t psn = 0;
  bool to_front = false;
  Response response = Response::kAck;
  uint8_t rnr_timer = 0;
  uint64_t original = 0;      // atomics: the target's value before
  std::vector<uint8_t> data;  // RDMA READ: the data read
};

}  // namespace verbfault::sim
