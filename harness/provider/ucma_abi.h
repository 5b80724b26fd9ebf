// The rdma_cm file's ABI as the layers above the kernel see it, written
// once for the two readers of librdmacm's writes: the interposer's CM
// faults (interposer/cm_faults.cpp), which judge each command and event,
// and the relay to a kernel's rdma_cm (cm_relay.cpp). The commands and
// responses are the kernel's (<rdma/rdma_user_cm.h>); the event numbers
// are librdmacm's enum rdma_cm_event_type, which that header does not
// carry (the plan's CmEvent is numbered the same).
#pragma once

#include "verbfault/plan.h"

#include <netinet/in.h>  // before the kernel header: see sim/cm/connection_manager.h
#include <rdma/rdma_user_cm.h>

#include <cstdint>
#include <cstring>
#include <optional>

namespace verbfault::provider::ucma {

// An event's number in the ABI.
enum Event : std::uint32_t {
  kAddrResolved = 0,
  kAddrError = 1,
  kRouteResolved = 2,
  kRouteError = 3,
  kConnectRequest = 4,
  kConnectResponse = 5,
  kConnectError = 6,
  kUnreachable = 7,
  kRejected = 8,
  kEstablished = 9,
  kDisconnected = 10,
  kDeviceRemoval = 11,
  kMulticastJoin = 12,
  kMulticastError = 13,
  kAddrChange = 14,
  kTimewaitExit = 15,
};
static_assert(static_cast<std::uint32_t>(CmEvent::addr_change) == kAddrChange &&
                  static_cast<std::uint32_t>(CmEvent::timewait_exit) == kTimewaitExit,
              "the plan's CmEvent is numbered as the ABI");

// The command's structure from the bytes after the header of a write of
// `length` bytes, if all of it was written (the simulated CM and the
// kernel refuse a shorter one themselves).
template <class Command>
std::optional<Command> command_of(const void* buffer, std::size_t length) {
  if (length < sizeof(rdma_ucm_cmd_hdr) + sizeof(Command)) return std::nullopt;
  Command command;
  std::memcpy(&command, static_cast<const std::uint8_t*>(buffer) + sizeof(rdma_ucm_cmd_hdr),
              sizeof command);
  return command;
}

}  // namespace verbfault::provider::ucma
