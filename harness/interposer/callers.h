// Whose call is it: only the program's own calls are scheduling points.
// The locks and sleeps of the harness, of libibverbs and of the provider
// libraries are not (issue 11): they pass straight through.
#pragma once

namespace verbfault::interposer {

// Whether `return_address` lies in libverbfault, libibverbs, a verbs
// provider (lib*-rdmav*.so, libmlx*) or libnl (librdmacm is the program's:
// callers.cpp says why). Learns the
// loaded objects on first use and again when an address is in none of
// them (a library loaded later).
bool called_from_rdma_stack(const void* return_address);

// Whether `return_address` lies in librdmacm (dladdr: asked on the slow
// paths only, device opens and PD allocations).
bool called_from_connection_manager(const void* return_address);

// Whether `return_address` lies in libverbfault itself or in libibverbs
// and its providers: code that sees the real system only (the served
// sysfs and /dev of system_files.h are the program's view; the real
// libibverbs must not find a uverbs device without a kernel driver).
// dladdr: asked for served paths only.
bool called_from_verbs_library(const void* return_address);

// Whether `return_address` lies in the ThreadSanitizer runtime (libtsan),
// in a build with -fsanitize=thread (VERBFAULT_TSAN); always false in any
// other. TSan's interceptors find the functions they wrap with
// dlsym(RTLD_NEXT) from libtsan, which in a program linked with
// libverbfault.so (libtsan comes first) are our exports, and its own
// allocator reads the clock through clock_gettime, which binds to our
// export too: those calls must reach the C library untouched (a scheduling
// point there constructs the scheduler inside TSan's allocator, which
// reads the clock again: a recursive static initialization that hangs).
// Learns libtsan's code range once, allocating nothing.
bool called_from_sanitizer(const void* return_address);

// Whether `return_address` lies in the AddressSanitizer runtime (libasan,
// preloaded or linked; false when it is not loaded). ASan has no
// interceptor for sched_yield or the sleeps (those of threads/clocks.cpp and synchronisation.cpp that
// ask this), so such a call from libasan is
// the runtime's own: LeakSanitizer's stop-the-world at exit spins on
// sched_yield with the allocator locked, and a scheduling point there
// waits for a thread that waits for the allocator. The calls ASan does
// intercept (clock_gettime, the locks, poll...) reach us from libasan on
// the program's behalf and stay scheduling points.
bool called_from_address_sanitizer(const void* return_address);

}  // namespace verbfault::interposer
