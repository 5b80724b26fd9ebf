// Endpoint's factory and fork helper; the endpoint itself is LocalEndpoint.
#include "endpoint.h"

#include "fabric_name.h"
#include "local_endpoint.h"

namespace verbfault::sim::wire {

std::unique_ptr<Endpoint> Endpoint::join(std::string_view fabric, std::optional<uint32_t> requested,
                                         std::string& error) {
  error = check_fabric_name(fabric);
  if (!error.empty()) return nullptr;
  auto endpoint = std::make_unique<LocalEndpoint>(std::string(fabric));
  if (!endpoint->open(requested, error)) return nullptr;
  return endpoint;
}

namespace {
// The endpoint a forked child abandoned. It cannot be destroyed there (its
// service thread and the locks it may hold stayed in the parent), so it
// lives as long as the child; kept reachable here so that LeakSanitizer,
// which scans globals, does not report it as a leak at the child's exit.
// Written once per process, by the fork handler (one thread in the child);
// volatile, or the compiler drops a store that nothing reads.
Endpoint* volatile abandoned_in_child = nullptr;
}  // namespace

void Endpoint::abandon_after_fork(std::unique_ptr<Endpoint>& endpoint) {
  Endpoint* released = endpoint.release();
  if (released != nullptr) abandoned_in_child = released;
  if (auto* local = dynamic_cast<LocalEndpoint*>(released)) local->abandon_in_child();
}

}  // namespace verbfault::sim::wire
