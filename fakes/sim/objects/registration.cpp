#include "registration.h"

#include "process_maps.h"

#include <infiniband/verbs.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>

namespace verbfault::sim {

int check_registration(const void* addr, std::size_t length, unsigned int access) {
  if (length == 0) return EINVAL;
  if (addr == nullptr) return EFAULT;
  const auto begin = reinterpret_cast<uintptr_t>(addr);
  const uintptr_t page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  // ib_umem_get: the end, rounded up to a page, must not wrap.
  if (begin + length < begin || ((begin + length + page - 1) & ~(page - 1)) < begin + length)
    return EINVAL;
  constexpr unsigned int kWritable = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
                                     IBV_ACCESS_REMOTE_ATOMIC | IBV_ACCESS_MW_BIND;
  const bool write = (access & kWritable) != 0;
  const bool pinnable =
      process_maps::covered_by(begin, begin + length, [&](const process_maps::Mapping& line) {
        return line.perms.size() >= 2 && (write ? line.perms[1] == 'w' : line.perms[0] == 'r');
      });
  return pinnable ? 0 : EFAULT;
}

}  // namespace verbfault::sim
