// A work completion as it sits in a completion queue.
#pragma once

#include <infiniband/verbs.h>

#include <cstdint>

namespace verbfault::sim {

class QueuePair;
class SharedReceiveQueue;

// ibv_poll_cq(3): "when status != IBV_WC_SUCCESS, only wr_id, status,
// qp_num and vendor_err are valid". Every other byte of an error completion
// is set to this pattern, so that an application that reads them gets an
// unmistakable value (opcode 0xa5a5a5a5 is no ibv_wc_opcode).
inline constexpr uint8_t kPoisonByte = 0xa5;

struct Completion {
  ibv_wc wc{};
  // Which work queue the completion releases a slot of when it is polled
  // (nullptr once the QP or SRQ is gone).
  QueuePair* qp = nullptr;
  SharedReceiveQueue* srq = nullptr;
  bool send_queue = false;
  uint64_t sq_seq = 0;     // send completions: slots up to here are free
  bool solicited = false;  // receive of a SEND with IBV_SEND_SOLICITED
  std::uint64_t step = 0;  // Fabric::step() when it entered the CQ
};

// vendor_err values of the simulated device (documented in
// docs/device.md, "Error model"): which rule produced an error completion.
enum VendorError : uint32_t {
  kVendorNone = 0,
  kVendorFlush = 0x100,
  kVendorLocalProtection = 0x101,
  kVendorLocalLength = 0x102,
  kVendorRemoteAccess = 0x103,
  kVendorRemoteInvalidRequest = 0x104,
  kVendorRnrRetryExceeded = 0x105,
  kVendorRetryExceeded = 0x106,
  kVendorRemoteOperation = 0x107,
  kVendorLocalQpOperation = 0x108,
  kVendorMemoryWindowBind = 0x109,
};

}  // namespace verbfault::sim
