// Memory that ends at an inaccessible page: an array placed at its end is
// followed by a PROT_NONE page, so that reading one element past the array
// faults at once instead of reading whatever happens to lie there. For
// tests that a WR's sg_list is not read beyond what num_sge may say.
#pragma once

#include <sys/mman.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>

namespace verbfault::testing {

class GuardedArray {
 public:
  explicit GuardedArray(std::size_t bytes) : bytes_(bytes) {
    page_ = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
    const std::size_t pages = (bytes + page_ - 1) / page_ + 1;
    length_ = pages * page_;
    void* map = mmap(nullptr, length_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    EXPECT_NE(map, MAP_FAILED);
    base_ = static_cast<std::uint8_t*>(map);
    EXPECT_EQ(mprotect(base_ + length_ - page_, page_, PROT_NONE), 0);
  }
  ~GuardedArray() { munmap(base_, length_); }
  GuardedArray(const GuardedArray&) = delete;
  GuardedArray& operator=(const GuardedArray&) = delete;

  // `count` Ts that end where the guard page begins.
  template <class T>
  T* at_end(std::size_t count = 1) {
    EXPECT_LE(count * sizeof(T), bytes_);
    return reinterpret_cast<T*>(base_ + length_ - page_ - count * sizeof(T));
  }

 private:
  std::size_t bytes_;
  std::size_t page_ = 0;
  std::size_t length_ = 0;
  std::uint8_t* base_ = nullptr;
};

}  // namespace verbfault::testing
