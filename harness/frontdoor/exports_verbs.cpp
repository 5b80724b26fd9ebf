// The exported ibv_* verbs: one forwarder per row of the verb table
// (record/verb_table.h), with libibverbs' own signature, each forwarding
// to the interposer's function of its verb (interposer/calls.h). Their
// symbol versions come from the same table (libibverbs.map.in).
#include "exports.h"
#include "thread_calls.h"
#include "verb_table.h"

namespace {
namespace interposer = verbfault::interposer;
namespace calls = verbfault::interposer::calls;
namespace thread_calls = verbfault::interposer::thread_calls;
}  // namespace

// Each reads the process's run (interposer.h process_run) and passes it
// on. POINT: a scheduling point, after the run is read: in a fork server
// (fork_server.h) the first verbs call is where the seed's run and its
// scheduler are made, and that call is the schedule's first step, as it is
// for a process started with the seed. CALLER: the same, and the
// interposer learns who called (the return address into the program or
// library). INSIDE: libibverbs and librdmacm call these from within
// another verb; no scheduling point there.
#define VERBFAULT_FORWARD_POINT(name, args)         \
  interposer::Run& run = interposer::process_run(); \
  thread_calls::verbs_point();                      \
  return calls::name(run, VERBFAULT_UNPAREN args);
#define VERBFAULT_FORWARD_CALLER(name, args)        \
  interposer::Run& run = interposer::process_run(); \
  thread_calls::verbs_point();                      \
  return calls::name(run, VERBFAULT_UNPAREN args, __builtin_return_address(0));
#define VERBFAULT_FORWARD_INSIDE(name, args) \
  return calls::name(interposer::process_run(), VERBFAULT_UNPAREN args);

#define VERBFAULT_EXPORT(ret, name, symbol, version, params, args, front, route, by) \
  ret symbol params {                                                                \
    VERBFAULT_FORWARD_##front(name, args)                                            \
  }

extern "C" {
VERBFAULT_VERBS(VERBFAULT_EXPORT)
}  // extern "C"
