// A CM file relayed to a connection manager the harness does not run: the
// kernel's rdma_cm (a real provider's), or, as its stand-in in tests, a CM
// file of the simulated fabric treated as if it were the kernel's
// (VERBFAULT_CM_LEVEL=effect). The program's descriptor is an epoll set of
// the inner file, an eventfd of the events the relay makes, and a timerfd
// of the events it holds back, so poll(2), epoll and select on it see what
// GET_EVENT would return; every command goes through to the inner file.
//
// The plan's cm_* faults are made here at effect level: what the program
// sees of a network failure, since the relay cannot make the failure in a
// kernel. A command the failure stops is not passed on (a resolve, a
// connect) and the event the failure ends in is made; an event read from
// the kernel may be withdrawn or held back. The kernel counts every event
// it reported (DESTROY_ID and MIGRATE_ID return the count, and librdmacm
// waits for as many acknowledgements): the relay takes the events it
// withdrew off those counts, so a withdrawn event needs no ack.
//
// Thread safety: the relays and the ids' facts are guarded by one mutex of
// this file, never held while a blocking GET_EVENT waits.
#pragma once

#include "connection_manager.h"

#include <sys/stat.h>
#include <sys/types.h>

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

namespace verbfault::provider::cm_relay {

// A relay over `inner` (an open CM file this relay owns from now on;
// `simulated`: a CM file of the simulated fabric), with open(2)'s `flags`
// (O_NONBLOCK, O_CLOEXEC): the program's descriptor, or -1 with errno.
int open(int inner, bool simulated, int flags);
// Whether `fd` is a relay: lock-free, one load.
bool is_relay(int fd);
// write(2) of a command; `fault` is made if the command is the step it
// breaks (connection_manager.h's cm_write says which).
ssize_t write(int fd, const void* buffer, std::size_t length, CmFault fault);
bool withdraw_event(int fd, unsigned handle);
// Held back `delay_ns` of the monotonic clock: a real network's time.
bool delay_event(int fd, unsigned long long delay_ns);
bool event_was_delayed(int fd);
bool on_ethernet(int fd, unsigned handle);
bool neighbour_changed(int fd, unsigned handle);
bool peer_gone(int fd, unsigned handle);
// DEVICE_REMOVAL made for id `handle` and every id of the process the
// kernel says is on the same device (QUERY's node GUID).
bool device_removed(int fd, unsigned handle);
// ADDR_CHANGE made for id `handle` and every id of the process the kernel
// says is on the same port (QUERY's node GUID and port number).
bool address_changed(int fd, unsigned handle);
// The ids the relay has seen made on `fd`; their states are the kernel's
// to know ("kernel").
std::vector<std::pair<unsigned, std::string>> id_states(int fd);
// fstat(2): the inner file's (a kernel's node is its character device).
bool stat(int fd, struct stat* out);
int close(int fd);

}  // namespace verbfault::provider::cm_relay
