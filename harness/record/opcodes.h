// Verbs opcodes as the plan names them (verbfault::Opcode).
#pragma once

#include "verbfault/plan.h"

#include <infiniband/verbs.h>

#include <cstring>
#include <optional>
#include <type_traits>

namespace verbfault::record {

// The value of an enum field someone else filled in, read as its underlying
// integer: loading a value that is none of the enumerators as the enum
// type is undefined behaviour (the 0xa5a5a5a5 opcode of an error
// completion, ibv_poll_cq(3); an application's opcode 0x7f or qp_state 99).
// Compare it with the enumerators before converting it.
template <class Enum>
std::underlying_type_t<Enum> raw_value(const Enum& field) {
  std::underlying_type_t<Enum> value;
  std::memcpy(&value, &field, sizeof value);
  return value;
}

// By reference: the field is read with raw_value, never loaded as the enum.
inline std::optional<Opcode> opcode_of(const ibv_wr_opcode& field) {
  switch (raw_value(field)) {
    case IBV_WR_SEND:
      return Opcode::send;
    case IBV_WR_SEND_WITH_IMM:
      return Opcode::send_with_imm;
    case IBV_WR_RDMA_WRITE:
      return Opcode::rdma_write;
    case IBV_WR_RDMA_WRITE_WITH_IMM:
      return Opcode::rdma_write_with_imm;
    case IBV_WR_RDMA_READ:
      return Opcode::rdma_read;
    case IBV_WR_ATOMIC_CMP_AND_SWP:
      return Opcode::atomic_cmp_and_swp;
    case IBV_WR_ATOMIC_FETCH_AND_ADD:
      return Opcode::atomic_fetch_and_add;
    default:
      return std::nullopt;
  }
}

inline std::optional<Opcode> opcode_of(const ibv_wc_opcode& field) {
  switch (raw_value(field)) {
    case IBV_WC_SEND:
      return Opcode::send;
    case IBV_WC_RDMA_WRITE:
      return Opcode::rdma_write;
    case IBV_WC_RDMA_READ:
      return Opcode::rdma_read;
    case IBV_WC_COMP_SWAP:
      return Opcode::atomic_cmp_and_swp;
    case IBV_WC_FETCH_ADD:
      return Opcode::atomic_fetch_and_add;
    case IBV_WC_RECV:
      return Opcode::recv;
    case IBV_WC_RECV_RDMA_WITH_IMM:
      return Opcode::recv_rdma_with_imm;
    default:
      return std::nullopt;
  }
}

}  // namespace verbfault::record
