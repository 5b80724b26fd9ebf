// What the kernel checks of the memory behind a memory registration
// (ibv_reg_mr(3), ibv_rereg_mr(3) with a new translation), before it pins
// the pages (ib_umem_get): the simulated device refuses the same.
#pragma once

#include <cstddef>

namespace verbfault::sim {

// 0 when [addr, addr + length) can be registered with `access`
// (ibv_access_flags); else the errno of the failed registration:
// - EINVAL: no bytes, or a range that wraps around the address space;
// - EFAULT: NULL, a page that is not mapped, or not readable (PROT_NONE);
//   and, for a region the HCA may write (IBV_ACCESS_LOCAL_WRITE,
//   REMOTE_WRITE, REMOTE_ATOMIC, MW_BIND: ib_access_writable, which pins
//   with FOLL_WRITE), a page that is not writable.
// Reads /proc/self/maps: registration is a slow path on a real HCA too.
int check_registration(const void* addr, std::size_t length, unsigned int access);

}  // namespace verbfault::sim
