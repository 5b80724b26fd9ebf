// The kernel reads a command and writes its response through user pointers
// (copy_from_user / copy_to_user); the simulated manager serves the
// process's own, where a NULL one is the EFAULT the kernel would give.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace verbfault::sim::cm {

inline bool write_response(uint64_t response, const void* what, std::size_t size) {
  if (response == 0) return false;
  std::memcpy(reinterpret_cast<void*>(static_cast<uintptr_t>(response)), what, size);
  return true;
}

}  // namespace verbfault::sim::cm
