// The hang watchdog, on every provider (docs/threads-and-time.md, "The hang watchdog"):
// when no verbs call has made progress for the hang time
// (VERBFAULT_HANG_AFTER, `verbfault run --hang-after S`) while every
// application thread waits or spins in a call the harness sees, the run
// ends with exit status 122, the list of what each thread waits for, the
// trace and the replay line (check liveness.hang). The judgement itself is
// observers/checkers/hang_watch.h; this is what feeds it.
//
// The interposer's calls tell it, from any thread, what they did: progress
// (a post, a completion polled, an event taken, an object created,
// modified or destroyed), nothing (an empty poll, no event to take), or a
// blocking wait. Each thread's part is a slot of its own in a fixed table,
// written with relaxed atomics by that thread and read by the watchdog: an
// empty poll costs two stores, no allocation, no lock.
#pragma once

#include "verbfault/plan.h"

#include <cstdint>

namespace verbfault::interposer::hang {

// From the configuration (the Run's constructor); 0: off.
void configure(std::uint64_t after_ns);
bool enabled();
// How often the watchdog thread should look.
std::uint64_t look_interval_ns();

// A verbs call made progress.
void progressed() noexcept;
// A verbs call of the calling thread, `call` (a string literal), made
// none on `object` (the CQ polled empty, the channel with no event).
void idle(const char* call, ObjectRef object) noexcept;

// The calling thread blocks in `call` (a string literal) on `object`
// until the guard goes: ibv_get_cq_event, ibv_get_async_event,
// pthread_join without the scheduler.
class Blocked {
 public:
  Blocked(const char* call, ObjectRef object) noexcept;
  explicit Blocked(const char* call) noexcept;  // on no verbs object
  ~Blocked();
  Blocked(const Blocked&) = delete;
  Blocked& operator=(const Blocked&) = delete;

 private:
  void enter(const char* call, std::uint64_t object) noexcept;
  const char* previous_ = nullptr;
};

// One look of the watchdog thread at wall-clock time `wall_ns`: ends the
// run when it is hung (does not return then).
void look(std::uint64_t wall_ns);

}  // namespace verbfault::interposer::hang
