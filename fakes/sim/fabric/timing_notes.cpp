#include "timing_notes.h"

#include "fabric.h"

#include <atomic>
#include <mutex>

namespace verbfault::sim {

namespace {

// Guarded by Fabric::mutex; `pending` mirrors !notes().empty() for readers
// without the lock.
std::vector<std::string>& notes() {
  static auto* list = new std::vector<std::string>();  // never destroyed: used at exit
  return *list;
}
std::atomic<bool> pending{false};

}  // namespace

void note_timing(std::string note) {
  notes().push_back(std::move(note));
  pending.store(true, std::memory_order_release);
}

bool timing_notes_pending() {
  return pending.load(std::memory_order_relaxed);
}

std::vector<std::string> take_timing_notes() {
  std::lock_guard guard(process_fabric().mutex);
  std::vector<std::string> taken;
  taken.swap(notes());
  pending.store(false, std::memory_order_release);
  return taken;
}

}  // namespace verbfault::sim
