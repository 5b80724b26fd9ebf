// This process's memory mappings, as /proc/self/maps lists them (proc(5)):
// what the simulated device checks of memory an application registers
// (registration.h) and what it may move onto a memfd (shared_memory.h).
#pragma once

#include <cstdint>
#include <functional>
#include <string>

namespace verbfault::sim::process_maps {

// One line of /proc/self/maps.
struct Mapping {
  uintptr_t begin = 0;
  uintptr_t end = 0;
  std::string perms;  // "rw-p"
  unsigned long inode = 0;
  std::string path;
};

// Whether every byte of [begin, end) is in mappings `accept` takes, with
// no hole. proc(5): lines are in address order.
bool covered_by(uintptr_t begin, uintptr_t end, const std::function<bool(const Mapping&)>& accept);

}  // namespace verbfault::sim::process_maps
