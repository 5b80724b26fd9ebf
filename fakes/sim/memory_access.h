// Checked access to registered memory through lkeys and rkeys.
#pragma once

#include <infiniband/verbs.h>

#include <cstdint>
#include <span>
#include <vector>

namespace verbfault::sim {

class ProtectionDomain;

// Copies the bytes described by local SGEs. False when an lkey is unknown,
// belongs to another PD or an SGE leaves its region (IBV_WC_LOC_PROT_ERR).
bool gather(ProtectionDomain& pd, std::span<const ibv_sge> sges, std::vector<uint8_t>& out);

// Checks that local SGEs can receive data: lkey in the PD, inside the
// region, and IBV_ACCESS_LOCAL_WRITE.
bool writable(ProtectionDomain& pd, std::span<const ibv_sge> sges);

// Writes data into local SGEs (checked with writable() first), skipping the
// first `offset` bytes of the SGE list.
void scatter(ProtectionDomain& pd, std::span<const ibv_sge> sges, uint64_t offset,
             const uint8_t* data, uint64_t length);

// The host address of [addr, addr + length) behind an rkey if the region is
// in `pd` and allows `access` (IBV_ACCESS_REMOTE_*), else nullptr.
uint8_t* remote_memory(ProtectionDomain& pd, uint32_t rkey, uint64_t addr, uint64_t length,
                       unsigned int access);

}  // namespace verbfault::sim
