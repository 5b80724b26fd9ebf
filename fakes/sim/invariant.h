// Always-on checks of the simulated device's invariants: the rules of IBA
// and the man pages the model is built on (a QP's state is one of IBA
// 10.3.1's, a work queue holds at most its max_wr, a CQ at most its cqe).
// A broken one is a bug of the device, not of the program under test: the
// process stops at once (abort(3), so a core and the sanitizers' reports
// show where) with one line naming the file, the line and the invariant.
// The line is written with write(2): no allocation, no stdio, the
// device's lock held.
#pragma once

namespace verbfault::sim {

[[noreturn]] void invariant_broken(const char* file, int line, const char* condition,
                                   const char* what) noexcept;

}  // namespace verbfault::sim

// VERBFAULT_ASSERT(condition, "what it means"): costs one branch.
#define VERBFAULT_ASSERT(condition, what)                                         \
  do {                                                                            \
    if (!(condition)) [[unlikely]]                                                \
      ::verbfault::sim::invariant_broken(__FILE__, __LINE__, #condition, (what)); \
  } while (0)
