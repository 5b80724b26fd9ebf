// The service thread's stack, scanned by LeakSanitizer for as long as the
// thread runs.
//
// LeakSanitizer scans the stacks of the threads it knows, and it knows the
// ones made through AddressSanitizer's pthread_create interceptor. The
// wire's service thread is not one: libverbfault is linked -Bsymbolic, so
// its own pthread_create call binds to its own export (the thread
// scheduler's), which reaches the C library directly. What that thread
// holds only in its locals when the program exits (a connection being
// closed because the peer ended at the same moment) was reported as
// leaked (local_fabric.same_seed, sanitized). Creating it through the
// interceptor instead is worse: a child forked while it runs reports the
// parent's thread "not suspended" at its exit. So the thread lends its own
// stack to the leak check as a root region (sanitizer/lsan_interface.h).
//
// Without LeakSanitizer (the normal build) this does nothing.
#pragma once

#include <cstddef>

namespace verbfault::sim::wire {

class StackSeenByLeakCheck {
 public:
  // Registers the calling thread's stack (pthread_getattr_np(3)).
  StackSeenByLeakCheck();
  // Unregisters it: after the thread returns, its stack may be unmapped or
  // handed to another thread.
  ~StackSeenByLeakCheck();
  StackSeenByLeakCheck(const StackSeenByLeakCheck&) = delete;
  StackSeenByLeakCheck& operator=(const StackSeenByLeakCheck&) = delete;

 private:
  void* begin_ = nullptr;
  std::size_t size_ = 0;
};

}  // namespace verbfault::sim::wire
