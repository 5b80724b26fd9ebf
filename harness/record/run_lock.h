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
    ++held_here();
  }
  bool try_lock() noexcept {
    if (locked_.load(std::memory_order_relaxed) ||
        locked_.exchange(true, std::memory_order_acquire))
      return false;
    ++held_here();
    return true;
  }
  void unlock() noexcept {
    --held_here();
    locked_.store(false, std::memory_order_release);
  }

  // Whether the calling thread holds a RunLock (any): then it runs the
  // harness's own code, and whatever it calls that comes back to the front
  // door (malloc entering an application's memory hooks, which take a
  // pthread_rwlock) must pass straight through: a scheduling point there
  // would wait for the lock this thread holds (issue 32).
  static bool held_by_this_thread() noexcept { return held_here() > 0; }

 private:
  static constexpr unsigned kSpinsBeforeYield = 100;
  static void pause() noexcept {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
  }
  // How many RunLocks the thread holds; owned by the thread itself.
  static unsigned& held_here() noexcept {
    __attribute__((tls_model("initial-exec"))) static thread_local unsigned held = 0;
    return held;
  }
  std::atomic<bool> locked_{false};
};

}  // namespace verbfault::record
