// The connection manager of the simulated fabric, as the kernel serves it
// to librdmacm: the character device /dev/infiniband/rdma_cm and the
// command interface written to it (<rdma/rdma_user_cm.h>, ABI version 4;
// drivers/infiniband/core/ucma.c). librdmacm itself runs unmodified on top,
// so everything built on it (rsockets, rdma_create_ep, rdma_getaddrinfo)
// is served as the kernel's users are (docs/local-fabric.md, "The
// connection manager").
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace verbfault::sim::cm {

// The node librdmacm opens, and the misc class directory it reads the ABI
// version from (check_abi_version_sysfs: class/misc/rdma_cm/abi_version).
inline constexpr std::string_view kDevicePath = "/dev/infiniband/rdma_cm";
inline constexpr std::string_view kMiscClass = "/sys/class/misc/rdma_cm";
// rdma_cm is a misc device (major 10) whose minor the kernel hands out at
// load time; librdmacm compares it only with what RDMA netlink says, which
// the simulated fabric does not answer, so any fixed number serves.
inline constexpr unsigned kMiscMajor = 10;
inline constexpr unsigned kMinor = 250;

// Whether the system has a connection manager of its own (a real
// /dev/infiniband/rdma_cm, e.g. rxe's): then the simulated one is not
// served and librdmacm talks to the kernel as before.
bool real_device_present();

// open(2) of kDevicePath: a descriptor of a new CM file (an eventfd whose
// readability says events wait), with `flags`' O_NONBLOCK and O_CLOEXEC;
// -1 with errno set.
int open_file(int flags);
// Whether `fd` is an open CM file. Lock-free: asked on every write(2) and
// close(2) of the process.
bool is_file(int fd);
// A failure of the network the harness's fault plan asks for (its cm_*
// kinds), made at its cause by the command it is given to:
//   kAddrError    RESOLVE_IP/RESOLVE_ADDR: the neighbour (ARP, IPoIB)
//                 resolution gets no answer: ADDR_ERROR, -ETIMEDOUT
//                 (addr.c's timeout), the id back to ADDR_BOUND;
//   kRouteError   RESOLVE_ROUTE: the path query gets no answer from the
//                 subnet administrator: ROUTE_ERROR, -ETIMEDOUT, the id
//                 back to ADDR_RESOLVED;
//   kUnreachable  CONNECT: the REQ (SIDR REQ) is lost on every retry:
//                 UNREACHABLE, -ETIMEDOUT (IBA 12.6.5: max_cm_retries);
//   kReject       CONNECT: the passive side rejects it (IBA 12.6.7,
//                 reason 28 consumer-defined, with private data; a UD id's
//                 SIDR REP status 2, IBA 12.11.2): REJECTED (UNREACHABLE
//                 with status 2 for UD), the passive application never
//                 hearing of it, as when its CM refuses a request its
//                 listener's backlog has no room for.
enum class Fault : unsigned char { kNone, kAddrError, kRouteError, kUnreachable, kReject };

// The private data of an injected REJ: what an application that reads
// REJECTED's private data finds.
inline constexpr std::string_view kRejectPrivateData = "verbfault: cm_reject";

// write(2) of a command to a CM file: the command's return as the kernel's
// ucma_write gives it (`length` on success; -1 with errno set). A blocking
// GET_EVENT waits here until an event comes. `fault`: made by this command
// if it is the one the fault breaks (else ignored).
ssize_t write(int fd, const void* buffer, std::size_t length, Fault fault = Fault::kNone);
// The event of id `handle` that GET_EVENT on `fd` just returned never
// happened (cm_lost_disconnect, cm_timewait_exit_missing): it no longer
// counts among the id's reported events, which DESTROY_ID returns and
// librdmacm's rdma_destroy_id waits to see acknowledged. false: no such id.
bool withdraw_event(int fd, unsigned handle);
// The event GET_EVENT on `fd` just returned comes again after `delay_ns` of
// the fabric's virtual time, behind whatever came meanwhile (cm_delay: a
// message of the CM held up on the way); until then it was never read.
// false: no event to delay (none read, or one already delayed).
bool delay_event(int fd, unsigned long long delay_ns);
// The peer of id `handle`'s connection is gone (cm_disconnect: the
// process died, or the network between them): the id hears DISCONNECTED
// as from the DREQ the peer's kernel sends when it destroys its ids, and
// the connection is this side's to leave. The peer's own side is not told
// (it is gone). false: no such id, or not connected.
bool peer_gone(int fd, unsigned handle);
// Whether id `handle` is bound to a port of Ethernet link layer (RoCE).
bool on_ethernet(int fd, unsigned handle);
// cm_unreachable after ESTABLISHED: the neighbour (ARP entry) of the id's
// route changed its hardware address, and the kernel (since Linux 6.0,
// cma_netevent_callback, RoCE ids) queues UNREACHABLE with -ETIMEDOUT for
// it, the connection's state left as it is. false: no such id, or not on
// an Ethernet port.
bool neighbour_changed(int fd, unsigned handle);
// cm_device_removal: the device id `handle` is bound to is removed (hot
// unplug, a driver unloaded): every id of the process on it moves to
// DEVICE_REMOVAL and hears the event (cma_process_remove); later commands
// on them fail but DESTROY_ID. false: no such id, or bound to no device.
bool device_removed(int fd, unsigned handle);
// cm_addr_change: the netdev of the port id `handle` is bound to takes
// another hardware address (a bond fails over to another slave): every id
// of the process bound to that port hears ADDR_CHANGE, status 0, its state
// unchanged (cma_netdev_change). false: no such id, or bound to no device.
bool address_changed(int fd, unsigned handle);
// The ids of CM file `fd` with their states as the kernel names them
// (enum rdma_cm_state: "listen", "route_resolved", "connect" ...; a
// connected id's IB CM state after a slash: "connect/established"), in id
// order: what a report of a wait on the file says.
std::vector<std::pair<unsigned, std::string>> id_states(int fd);
// Whether the event GET_EVENT on `fd` just returned is one a delay put
// back (not an opportunity of the plan again).
bool event_was_delayed(int fd);
// close(2) of a CM file: its ids are destroyed, as at the kernel's release
// of the file. Returns what close(2) of the descriptor returns.
int close_file(int fd);

// What a process shows the system while an id of it listens, or a full
// member's join hears its group: a listening UNIX socket
// ("@verbfault-cm/<pid>/<key>"), which `verbfault run` reads as "ready
// for its peer" (listening_socket.h). The simulated manager shows its own;
// a relay of the kernel's rdma_cm shows its ids' with these, by a key of
// its choosing (at most one socket per key). Thread-safe.
void show_listening(unsigned key);
void hide_listening(unsigned key);

}  // namespace verbfault::sim::cm
