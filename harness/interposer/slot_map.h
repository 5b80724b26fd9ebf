// A map from a 64-bit key (an object's address, a QP number) to a slot
// number: open addressing with linear probing, deletion by backward shift
// (no tombstones), kept at most half full. A lookup on the fast path is a
// multiply, a shift and usually one cache line.
//
// Owner: whoever owns the registry that holds it (the interposer lock).
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

namespace verbfault::interposer {

class SlotMap {
 public:
  SlotMap() : entries_(kInitialCapacity) {}

  std::optional<std::uint32_t> find(std::uint64_t key) const {
    for (std::size_t i = home(key);; i = next(i)) {
      const Entry& e = entries_[i];
      if (!e.used) return std::nullopt;
      if (e.key == key) return e.slot;
    }
  }

  void insert(std::uint64_t key, std::uint32_t slot) {
    if (2 * (size_ + 1) > entries_.size()) grow();
    for (std::size_t i = home(key);; i = next(i)) {
      Entry& e = entries_[i];
      if (e.used && e.key != key) continue;
      if (!e.used) ++size_;
      e = {key, slot, true};
      return;
    }
  }

  void erase(std::uint64_t key) {
    std::size_t hole = home(key);
    for (;; hole = next(hole)) {
      if (!entries_[hole].used) return;
      if (entries_[hole].key == key) break;
    }
    // Backward shift: move later entries of the probe run into the hole
    // when their home position allows it.
    for (std::size_t i = next(hole);; i = next(i)) {
      Entry& e = entries_[i];
      if (!e.used) break;
      const std::size_t h = home(e.key);
      const bool movable = hole <= i ? (h <= hole || h > i) : (h <= hole && h > i);
      if (!movable) continue;
      entries_[hole] = e;
      hole = i;
    }
    entries_[hole].used = false;
    --size_;
  }

 private:
  struct Entry {
    std::uint64_t key = 0;
    std::uint32_t slot = 0;
    bool used = false;
  };
  static constexpr std::size_t kInitialCapacity = 64;

  std::size_t home(std::uint64_t key) const {
    // Fibonacci hashing: addresses differ in their middle bits.
    return static_cast<std::size_t>((key * 0x9e3779b97f4a7c15ull) >> 32) & (entries_.size() - 1);
  }
  std::size_t next(std::size_t i) const { return (i + 1) & (entries_.size() - 1); }
  void grow() {
    std::vector<Entry> old(entries_.size() * 2);
    old.swap(entries_);
    size_ = 0;
    for (const Entry& e : old)
      if (e.used) insert(e.key, e.slot);
  }

  std::vector<Entry> entries_;
  std::size_t size_ = 0;
};

}  // namespace verbfault::interposer
