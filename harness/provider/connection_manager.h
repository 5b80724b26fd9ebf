// The connection manager's character device (/dev/infiniband/rdma_cm) for
// the interposer's file calls: the simulated fabric's (sim/cm.h) when the
// system has none of its own; the kernel's, through a relay (cm_relay.h),
// when it has. Either way a CM file is a descriptor these calls know.
#pragma once

#include <sys/stat.h>
#include <sys/types.h>

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

namespace verbfault::provider {

// Whether the system has a connection manager of its own (a real
// provider's rdma_cm node): then its files are relayed, not simulated.
bool cm_kernel_present();
// open(2) of the connection manager's node: a CM file's descriptor, or -1
// with errno. The kernel's is relayed (its faults made at effect level);
// without one the simulated fabric's, relayed too when `effect_level`
// (VERBFAULT_CM_LEVEL=effect: the simulated manager run as if it were a
// kernel's, the stand-in of the effect-level tests).
int cm_open(int flags, bool effect_level);
// Whether `fd` is a CM file (simulated or relayed): lock-free, one load each.
bool cm_file(int fd);
// Whether `fd` is a relayed one: fed from outside the process, as a real
// provider's descriptors are; its faults are made at effect level.
bool cm_relayed(int fd);
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
// The device id `handle` is on is removed (cm_device_removal): its ids
// hear DEVICE_REMOVAL. false: no such id, or on no device.
bool cm_device_removed(int fd, unsigned handle);
// The netdev id `handle` is bound to changes its hardware address
// (cm_addr_change): the ids bound to that port hear ADDR_CHANGE. false: no
// such id, or bound to no device.
bool cm_address_changed(int fd, unsigned handle);
int cm_close(int fd);
// fstat(2) of a CM file: a character device (the kernel's own node, or the
// simulated misc device 10:250, 0666). false: not a CM file.
bool cm_stat(int fd, struct stat* out);

}  // namespace verbfault::provider
