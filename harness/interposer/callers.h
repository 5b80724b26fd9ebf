// Whose call is it: only the program's own calls are scheduling points.
// The locks and sleeps of the harness, of libibverbs and of the provider
// libraries are not (issue 11): they pass straight through.
#pragma once

namespace verbfault::interposer {

// Whether `return_address` lies in libverbfault, libibverbs, a verbs
// provider (lib*-rdmav*.so, libmlx*), librdmacm or libnl. Learns the
// loaded objects on first use and again when an address is in none of
// them (a library loaded later).
bool called_from_rdma_stack(const void* return_address);

}  // namespace verbfault::interposer
