#include "stack_seen_by_leak_check.h"

#include <pthread.h>

// LeakSanitizer's interface (sanitizer/lsan_interface.h), weak: defined
// only when the sanitizer runtime is loaded.
extern "C" {
void __lsan_register_root_region(const void* begin, std::size_t size) __attribute__((weak));
void __lsan_unregister_root_region(const void* begin, std::size_t size) __attribute__((weak));
}

namespace verbfault::sim::wire {

StackSeenByLeakCheck::StackSeenByLeakCheck() {
  if (__lsan_register_root_region == nullptr) return;
  pthread_attr_t attributes;
  if (pthread_getattr_np(pthread_self(), &attributes) != 0) return;
  void* begin = nullptr;
  std::size_t size = 0;
  // The usable stack, without its guard page (pthread_attr_getstack(3)).
  if (pthread_attr_getstack(&attributes, &begin, &size) == 0) {
    __lsan_register_root_region(begin, size);
    begin_ = begin;
    size_ = size;
  }
  pthread_attr_destroy(&attributes);
}

StackSeenByLeakCheck::~StackSeenByLeakCheck() {
  if (begin_ != nullptr) __lsan_unregister_root_region(begin_, size_);
}

}  // namespace verbfault::sim::wire
