// The real libibverbs behind the front door.
#pragma once

#include <dlfcn.h>
#include <infiniband/verbs.h>

#include <cstdio>
#include <cstdlib>

extern "C" {
// Exported by libibverbs but declared only in its private driver.h.
int ibv_read_sysfs_file(const char* dir, const char* file, char* buf, size_t size);
int ibv_query_gid_type(struct ibv_context* context, uint8_t port_num, unsigned int index,
                       int* type);
}

namespace verbfault::provider {

// The next definition of `name` at `version` after libverbfault.so in the
// process's lookup order: the real libibverbs (a DT_NEEDED dependency of
// libverbfault.so, so it is always loaded). Dies with a one-line message if
// it is missing: calling on would mean losing a verbs call silently.
template <class Fn>
Fn* real(const char* name, const char* version) {
  void* symbol = dlvsym(RTLD_NEXT, name, version);
  if (symbol == nullptr) {
    std::fprintf(stderr, "verbfault: cannot find the real %s@%s in libibverbs: %s\n", name, version,
                 dlerror());
    std::abort();
  }
  return reinterpret_cast<Fn*>(symbol);
}

// One lookup per call site, on first use.
#define VERBFAULT_REAL(fn, version)                                                  \
  ([]() {                                                                            \
    static auto* resolved = ::verbfault::provider::real<decltype(fn)>(#fn, version); \
    return resolved;                                                                 \
  }())

}  // namespace verbfault::provider
