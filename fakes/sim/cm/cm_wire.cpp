#include "cm_wire.h"

#include "fabric.h"
#include "remote_frames.h"
#include "wire/endpoint.h"

#include <array>
#include <cstring>

namespace verbfault::sim::cm {

bool send_to_member(Fabric& fabric, const Message& message) {
  wire::Endpoint* endpoint = fabric.endpoint();
  if (endpoint == nullptr) return false;
  const auto kind = remote::FrameKind::kConnectionManager;
  const std::array<std::span<const uint8_t>, 2> parts = {
      std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(&kind), 1),
      std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(&message), sizeof message)};
  return endpoint->send(message.target.member, parts);
}

bool message_of_frame(uint32_t from, std::span<const uint8_t> body, Message& message) {
  if (body.size() != sizeof message) return false;
  std::memcpy(&message, body.data(), sizeof message);
  // A frame names its sender by the connection it came on: a message that
  // says otherwise is not taken.
  return message.sender.member == from;
}

}  // namespace verbfault::sim::cm
