// VERBFAULT_CALLER: the return address of an exported C library call, for
// the interposer to tell the program's calls from the RDMA stack's own.
#pragma once

#ifdef VERBFAULT_ASAN_INIT_FIRST
// The sanitized build (cmake/Sanitizers.cmake), preloaded into a program
// built without ASan: another library's constructor can call in here
// before ASan's runtime has initialized (libnl-3's calls
// pthread_rwlock_wrlock; a constructor may open a file), and the
// interposer's instrumented code would touch shadow memory not mapped yet
// (SIGSEGV). __asan_init() initializes the runtime once and returns at
// once after; the files that use this are built without ASan so that
// their forwarders touch no shadow themselves.
extern "C" void __asan_init();
#define VERBFAULT_CALLER (__asan_init(), __builtin_return_address(0))
#else
#define VERBFAULT_CALLER __builtin_return_address(0)
#endif
