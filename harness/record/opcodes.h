// Verbs opcodes as the plan names them (verbfault::Opcode).
#pragma once

#include "verbfault/plan.h"

#include <infiniband/verbs.h>

#include <optional>

namespace verbfault::record {

inline std::optional<Opcode> opcode_of(ibv_wr_opcode opcode) {
  switch (opcode) {
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

inline std::optional<Opcode> opcode_of(ibv_wc_opcode opcode) {
  switch (opcode) {
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
