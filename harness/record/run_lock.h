// The lock that puts a run's calls in one order: the interposer holds it
// for every call it records (lent to the engine, which releases it around
// the provider calls of an injection). A spin lock rather than a
// std::mutex: it is taken once per fast-path call and held only across
// non-blocking work (never across a call that may block or call back into
// the front door: docs/architecture.md, "Locking"), so an uncontended
// acquire is one atomic exchange and a release one store, where a
// pthread mutex's release is a second atomic operation (about a quarter
// of an interposed empty poll, measured with perf). A waiter spins a
// little, then yields its CPU to the holder.
#pragma once

#include <atomic>
#include <thread>

namespace verbfault::record {

class RunLock {
 public:
  void lock() noexcept {
    while (locked_.exchange(true, std::memory_order_acquire)) {
      for (unsigned spins = 0; locked_.load(std::memory_order_relaxed); ++spins) {
        if (spins < kSpinsBeforeYield)
          pause();
        else
          std::this_thread::yield();
      }
    }
  }
  bool try_lock() noexcept {
    return !locked_.load(std::memory_order_relaxed) &&
           !locked_.exchange(true, std::memory_order_acquire);
  }
  void unlock() noexcept { locked_.store(false, std::memory_order_release); }

 private:
  static constexpr unsigned kSpinsBeforeYield = 100;
  static void pause() noexcept {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
  }
  std::atomic<bool> locked_{false};
};

}  // namespace verbfault::record
