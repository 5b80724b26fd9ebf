// The connection manager's faults (the plan's cm_* kinds) on the commands
// librdmacm writes to a CM file of the simulated fabric. The ids those
// commands make are tracked as cm_id#N, in the order this process's
// connection manager made them (rdma_create_id, and a listener's child at
// its CONNECT_REQUEST); each step a kind breaks is an opportunity the fault
// engine decides, and the simulated connection manager makes the failure
// at its cause (verbfault/sim/cm.h): the peer's side of a connection sees
// what the network would show it.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <string>

namespace verbfault::interposer {
class Run;
struct Tracked;
}  // namespace verbfault::interposer

namespace verbfault::interposer::cm_faults {

// What executing a command came to.
struct Executed {
  ssize_t result = 0;  // write(2)'s return (errno set when -1)
  // A GET_EVENT whose event the plan made never happen (cm_lost_disconnect,
  // cm_timewait_exit_missing): the caller waits for the next one.
  bool withdrawn = false;
};

// write(2) of the command in `buffer` to the simulated CM file `fd`.
Executed execute(Run& run, int fd, const void* buffer, std::size_t length);
// close(2) of a CM file: its ids are gone (lock not held).
void closed(Run& run, int fd);
// What a report of a wait on CM file `fd` calls it: "rdma_cm events of
// cm_id#1 (listen), cm_id#2 (connect/established)" (lock held).
std::string name_of_file(Run& run, int fd);
// A thread starts (or ends) waiting in rdma_get_cm_event on `fd`.
void waiting(int fd, bool starts);
// The scheduler found every thread waiting for good: a wait in
// rdma_get_cm_event is liveness.blocked_forever on the file's first id
// (lock not held; the caller ends the run).
void deadlocked(Run& run);
// cm_connect_error fired on the CONNECT_RESPONSE of the id that connected
// QP `qp`: this modify to RTR (librdmacm's, with the REP's parameters) is
// the one to fail; true once (lock held).
bool rtr_fails(Run& run, const void* qp);
// The id whose librdmacm cookie (the uid CREATE_ID and ACCEPT give the
// kernel: librdmacm's id_priv, whose first member is the public
// rdma_cm_id) is `uid`; null when none (lock held).
const Tracked* id_of_uid(Run& run, std::uint64_t uid);
// cm_disconnect fired on a WR of a QP that id `key` (record::Object::
// cm_id_handle) connected: the id hears that its peer is gone (lock not
// held; the QP's flush is the post's).
void peer_gone(Run& run, const void* key);

}  // namespace verbfault::interposer::cm_faults
