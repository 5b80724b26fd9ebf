// The descriptors one endpoint owns, listed where a forked child can find
// them (Endpoint::abandon_after_fork): a fixed array of atomics, never a
// container that another of the parent's threads may have been changing
// when fork(2) copied the memory.
#pragma once

#include <unistd.h>

#include <array>
#include <atomic>
#include <utility>

namespace verbfault::sim::wire {

class OwnedFds {
 public:
  // More than an endpoint has open (a listener, an epoll set, an eventfd,
  // one connection each way per member); one past that is simply not
  // listed, and a child would keep its copy (still O_CLOEXEC).
  static constexpr int kCapacity = 512;

  OwnedFds() {
    for (auto& slot : fds_) slot.store(-1, std::memory_order_relaxed);
  }
  OwnedFds(const OwnedFds&) = delete;
  OwnedFds& operator=(const OwnedFds&) = delete;

  void add(int fd) {
    for (auto& slot : fds_) {
      int empty = -1;
      if (slot.compare_exchange_strong(empty, fd, std::memory_order_relaxed)) return;
    }
  }
  void remove(int fd) {
    for (auto& slot : fds_) {
      int expected = fd;
      if (slot.compare_exchange_strong(expected, -1, std::memory_order_relaxed)) return;
    }
  }
  // In a forked child (one thread): closes the child's copy of each.
  void close_all_in_child() {
    for (auto& slot : fds_) {
      const int fd = slot.exchange(-1, std::memory_order_relaxed);
      if (fd >= 0) ::close(fd);
    }
  }

 private:
  std::array<std::atomic<int>, kCapacity> fds_;
};

// A descriptor, closed when this goes, and listed in an OwnedFds meanwhile
// (when one is given).
class OwnedFd {
 public:
  OwnedFd() = default;
  OwnedFd(int fd, OwnedFds* list) : fd_(fd), list_(list) {
    if (fd_ >= 0 && list_ != nullptr) list_->add(fd_);
  }
  OwnedFd(OwnedFd&& other) noexcept
      : fd_(std::exchange(other.fd_, -1)), list_(std::exchange(other.list_, nullptr)) {}
  OwnedFd& operator=(OwnedFd&& other) noexcept {
    if (this != &other) {
      reset();
      fd_ = std::exchange(other.fd_, -1);
      list_ = std::exchange(other.list_, nullptr);
    }
    return *this;
  }
  ~OwnedFd() { reset(); }

  int get() const { return fd_; }
  explicit operator bool() const { return fd_ >= 0; }
  void reset() {
    if (fd_ < 0) return;
    // Unlisted before closing: once closed, the number may be another
    // thread's new descriptor, which a child must not close.
    if (list_ != nullptr) list_->remove(fd_);
    ::close(fd_);
    fd_ = -1;
  }

 private:
  int fd_ = -1;
  OwnedFds* list_ = nullptr;
};

}  // namespace verbfault::sim::wire
