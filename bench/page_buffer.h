// Page-aligned memory for the benchmarks, touched once so that no
// benchmark pays for page faults or reads the shared zero page.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>

namespace verbfault::bench {

struct Buffer {
  explicit Buffer(std::size_t size)
      : size(size),
        bytes(static_cast<char*>(std::aligned_alloc(4096, (size + 4095) / 4096 * 4096))) {
    if (bytes != nullptr) std::memset(bytes.get(), 0x5a, size);
  }
  struct Free {
    void operator()(char* p) const { std::free(p); }
  };
  std::size_t size;
  std::unique_ptr<char, Free> bytes;
  uint64_t address(std::size_t offset = 0) const {
    return reinterpret_cast<uintptr_t>(bytes.get()) + offset;
  }
};

}  // namespace verbfault::bench
