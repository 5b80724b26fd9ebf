// The transport between simulated QPs of different processes: the
// requester's side sends a request frame and leaves the WQE in flight;
// the responder's process runs responder::receive on its service thread
// (the HCA of the target: no verbs call of the target is needed, as for a
// one-sided operation on real hardware) and answers; the requester's
// service thread completes the WQE. docs/local-fabric.md, "The local
// fabric".
#pragma once

#include "transport.h"
#include "work_request.h"

#include <cstdint>
#include <span>

namespace verbfault::sim {

class Fabric;
class QueuePair;

// Every function here runs under `fabric`'s mutex.
namespace remote {

// Sends `wqe` of `qp` to member `member` (the owner of the destination
// LID). False when the member is not there: nothing was sent.
bool send_request(QueuePair& qp, const SendWqe& wqe, const Message& message, uint32_t member);

// The service thread's handlers (wire::Endpoint::start, bound to the
// fabric that started it): they take its mutex.
void on_frame(Fabric& fabric, uint32_t from_member, std::span<const uint8_t> frame);
void on_peer_gone(Fabric& fabric, uint32_t member);

// Requests that wait for a receive WR (remote.cpp, HeldRequest):
// retry_held() executes those whose QP has one now (after a post_recv),
// settle_held() all of them (the fabric is quiescent: nothing will post
// one); true when any was executed. holds_requests(): whether any waits.
bool retry_held(Fabric& fabric);
bool settle_held(Fabric& fabric);
bool holds_requests();
// In a child made by fork(2): the parent's held requests are not its own.
void forget_held_after_fork();
// Tells `member` that this process gave up waiting for it (fabric_wait.cpp).
void give_up_on(Fabric& fabric, uint32_t member);
// Asks `member`, whose application threads all wait outside the device, to
// look again at what they wait on (fabric_wait.cpp).
void ask_to_look(Fabric& fabric, uint32_t member);

}  // namespace remote
}  // namespace verbfault::sim
