// Accesses to application memory that may fault although it was
// registered: the application may unmap or write-protect memory after
// ibv_reg_mr(3). A real HCA still reaches the pinned pages; the simulated
// device reaches them through the application's mapping, which may be
// gone. Each such access of the device runs under a guard: a SIGSEGV or
// SIGBUS inside it ends the access, which then fails (a protection error,
// docs/device.md "Error model"), instead of the process.
//
// The guard is a handler for SIGSEGV and SIGBUS, installed at the first
// memory registration, that jumps out of the guarded access of its thread
// (sigsetjmp(3): no signal mask saved; SA_NODEFER leaves the signal
// unblocked for the next fault). A fault outside a guarded access goes to
// the handler installed before (the harness's fatal-signal handler, a
// sanitizer's, the application's) or takes the default action. A handler
// the application installs later replaces this one: faults in guarded
// accesses are then its own.
#pragma once

namespace verbfault::sim::fault_guard {

// Installs the handler; again: nothing.
void install();

// Runs body(argument); false when a memory fault ended it (whatever it
// wrote up to the fault stays written). `body` must hold no lock and own no
// resource a jump out of it would leak: a copy loop.
bool run(void (*body)(void*), void* argument);

}  // namespace verbfault::sim::fault_guard
