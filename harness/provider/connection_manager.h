// The connection manager's character device (/dev/infiniband/rdma_cm) for
// the interposer's file calls: the simulated fabric's (sim/cm.h) when the
// system has none of its own. A real one is the kernel's and never passes
// through here (its node is not served: system_view.h).
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

namespace verbfault::provider {

// open(2) of the served node: a CM file's descriptor, or -1 with errno.
int cm_open(int flags);
// Whether `fd` is a CM file of the simulated fabric: lock-free, one load.
bool cm_file(int fd);
// A network failure the command meets, made at its cause by the
// simulated connection manager (the plan's cm_* kinds;
// verbfault/sim/cm.h says what each does).
enum class CmFault : unsigned char { kNone, kAddrError, kRouteError, kUnreachable, kReject };
// write(2) of a command to it (the kernel's ucma ABI); close(2) of it.
ssize_t cm_write(int fd, const void* buffer, std::size_t length, CmFault fault = CmFault::kNone);
// The event of id `handle` that GET_EVENT on `fd` just returned never
// happened (the id no longer counts it as reported). false: no such id.
bool cm_withdraw_event(int fd, unsigned handle);
// The event GET_EVENT on `fd` just returned comes again `delay_ns` of
// virtual time later, behind what comes meanwhile (it was never read);
// whether the event just returned was such a one (not delayed twice).
bool cm_delay_event(int fd, unsigned long long delay_ns);
// Whether id `handle`'s port is an Ethernet one (RoCE).
bool cm_id_on_ethernet(int fd, unsigned handle);
// The neighbour of id `handle`'s route changed its address (Linux 6.0+,
// RoCE): the id hears UNREACHABLE, -ETIMEDOUT, behind what it has heard.
bool cm_neighbour_changed(int fd, unsigned handle);
// The ids of CM file `fd` with their states ("connect/established"), in
// id order, for a report of a wait on the file.
std::vector<std::pair<unsigned, std::string>> cm_id_states(int fd);
// The peer of id `handle`'s connection is gone (cm_disconnect): the id
// hears DISCONNECTED as from the peer's DREQ. false: not connected.
bool cm_peer_gone(int fd, unsigned handle);
bool cm_event_was_delayed(int fd);
int cm_close(int fd);
// The character device's numbers, for fstat(2) of a CM file.
unsigned cm_major();
unsigned cm_minor();

}  // namespace verbfault::provider
