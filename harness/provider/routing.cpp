// The provider's dispatch of every ROUTED row of the verb table
// (record/verb_table.h): the simulated device's function of the same name
// when the row's deciding argument belongs to a simulated device, else the
// real libibverbs symbol at its version. The CUSTOM rows are written by
// hand (devices.cpp, resources.cpp, events.cpp).
#include "real_libibverbs.h"
#include "verbfault/sim/provider.h"
#include "verbs.h"

namespace verbfault::provider {

#define VERBFAULT_ROUTE_CUSTOM(ret, name, symbol, version, params, args, by)
#define VERBFAULT_ROUTE_ROUTED(ret, name, symbol, version, params, args, by) \
  ret name params {                                                          \
    if (simulated(by)) return sim::name args;                                \
    return VERBFAULT_REAL(symbol, version) args;                             \
  }
#define VERBFAULT_ROUTE(ret, name, symbol, version, params, args, front, route, by) \
  VERBFAULT_ROUTE_##route(ret, name, symbol, version, params, args, by)

VERBFAULT_VERBS(VERBFAULT_ROUTE)

}  // namespace verbfault::provider
