// A FIFO of work queue elements or completions that allocates only when it
// outgrows its capacity: std::deque allocates and frees a block every few
// elements as they pass through, so a steady stream of posts and polls
// would call malloc on the fast path. Capacity is a power of two and never
// shrinks; popped slots keep their (moved-from) values until reused.
#pragma once

#include <cstddef>
#include <utility>
#include <vector>

namespace verbfault::sim {

template <class T>
class Ring {
 public:
  Ring() = default;
  Ring(Ring&& other) noexcept
      : slots_(std::move(other.slots_)), head_(other.head_), size_(other.size_) {
    other.slots_.clear();
    other.head_ = other.size_ = 0;
  }
  Ring& operator=(Ring&& other) noexcept {
    if (this != &other) {
      slots_ = std::move(other.slots_);
      head_ = other.head_;
      size_ = other.size_;
      other.slots_.clear();
      other.head_ = other.size_ = 0;
    }
    return *this;
  }

  bool empty() const { return size_ == 0; }
  std::size_t size() const { return size_; }
  T& operator[](std::size_t i) { return slots_[(head_ + i) & (slots_.size() - 1)]; }
  const T& operator[](std::size_t i) const { return slots_[(head_ + i) & (slots_.size() - 1)]; }
  T& front() { return (*this)[0]; }
  T& back() { return (*this)[size_ - 1]; }

  void push_back(T value) {
    if (size_ == slots_.size()) grow();
    (*this)[size_] = std::move(value);
    ++size_;
  }
  void push_front(T value) {
    if (size_ == slots_.size()) grow();
    head_ = (head_ + slots_.size() - 1) & (slots_.size() - 1);
    ++size_;
    front() = std::move(value);
  }
  void pop_back() { --size_; }
  void pop_front() {
    head_ = (head_ + 1) & (slots_.size() - 1);
    --size_;
  }
  // Removes element i, moving the ones before it back by one (a CQ takes
  // completions from near its front).
  void erase(std::size_t i) {
    for (; i > 0; --i) (*this)[i] = std::move((*this)[i - 1]);
    pop_front();
  }
  void clear() { head_ = size_ = 0; }

  template <class Ring, class Value>
  class Iterator {
   public:
    Iterator(Ring* ring, std::size_t i) : ring_(ring), i_(i) {}
    Value& operator*() const { return (*ring_)[i_]; }
    Value* operator->() const { return &(*ring_)[i_]; }
    Iterator& operator++() {
      ++i_;
      return *this;
    }
    bool operator==(const Iterator& other) const { return i_ == other.i_; }

   private:
    Ring* ring_;
    std::size_t i_;
  };
  auto begin() { return Iterator<Ring, T>(this, 0); }
  auto end() { return Iterator<Ring, T>(this, size_); }
  auto begin() const { return Iterator<const Ring, const T>(this, 0); }
  auto end() const { return Iterator<const Ring, const T>(this, size_); }

 private:
  void grow() {
    std::vector<T> slots(slots_.empty() ? 8 : 2 * slots_.size());
    for (std::size_t i = 0; i < size_; ++i) slots[i] = std::move((*this)[i]);
    slots_ = std::move(slots);
    head_ = 0;
  }

  std::vector<T> slots_;
  std::size_t head_ = 0;
  std::size_t size_ = 0;
};

}  // namespace verbfault::sim
