// This process's memory mappings, as /proc/self/maps lists them (proc(5)):
// what the simulated device checks of memory an application registers
// (registration.h) and what it may move onto a memfd (shared_memory.h).
#pragma once

#include <cstdint>
#include <functional>
#include <string_view>

namespace verbfault::sim::process_maps {

// One line of /proc/self/maps; the views are into the reader's buffer,
// valid during the call of `accept` only.
struct Mapping {
  uintptr_t begin = 0;
  uintptr_t end = 0;
  std::string_view perms;  // "rw-p"
  unsigned long inode = 0;
  std::string_view path;
};

// Whether every byte of [begin, end) is in mappings `accept` takes, with
// no hole. proc(5): lines are in address order. Allocates nothing (the
// file is read into the stack): ibv_reg_mr runs this on the program's
// thread, and a block of the program's heap sized by a line of the file
// (the trace's journal is mapped, under the user's path) would move the
// program's later blocks, and with them wr_ids that are heap addresses.
bool covered_by(uintptr_t begin, uintptr_t end, const std::function<bool(const Mapping&)>& accept);

}  // namespace verbfault::sim::process_maps
