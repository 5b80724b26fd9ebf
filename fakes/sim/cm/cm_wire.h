// Messages between the connection managers of different members: each is
// one frame on the local fabric's wire (remote_frames.h,
// FrameKind::kConnectionManager), handled by the receiver's service thread
// under its Fabric::mutex (ConnectionManager::receive).
#pragma once

#include "cm_messages.h"

#include <cstdint>
#include <span>

namespace verbfault::sim {
class Fabric;
}  // namespace verbfault::sim

namespace verbfault::sim::cm {

// Queues `message` for `message.target.member`. False when no live member
// holds that index (or this process is on no fabric): nobody will answer.
// Called under Fabric::mutex.
bool send_to_member(Fabric& fabric, const Message& message);

// A frame's body as it came from member `from`: false unless it is a
// message whose sender is `from`.
bool message_of_frame(uint32_t from, std::span<const uint8_t> body, Message& message);

}  // namespace verbfault::sim::cm
