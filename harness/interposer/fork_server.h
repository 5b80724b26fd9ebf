// The fork server, the program's side: a sweep starts the program once with
// VERBFAULT_FORK_SERVER=<fd> (a SOCK_SEQPACKET socket to the harness) and
// no seed; at its first verbs call the process stops and serves seeds: for
// each request it forks a child that takes the request's environment (the
// seed, the plan, the trace ...), builds the harness's run from it as the
// library's constructor would have, and goes on with that first call; the
// server reports the child's pid and, when it ends, its wait status, then
// waits for the next request. The program's start-up (exec, dynamic
// linking, static constructors, whatever it does before its first verbs
// call) is paid once, as AFL's deferred fork server does for unmodified
// binaries.
//
// It is sound only when nothing the program did before that call is shared
// by the children in a way a fresh start would not be: the server refuses,
// with the reason, when the process has threads besides the caller, has
// started other processes, or holds a socket. The harness then runs every
// seed from exec (cli/fork_server.h).
//
// Messages (one datagram each, text):
//   server -> harness: "ready" | "refused <why>" | "pid <id> <pid>" |
//                      "end <id> <wait status>"
//   harness -> server: "run <id> <pgid>" NUL, then "NAME=VALUE" NUL ...
//                      with the harness's stdin, stdout, stderr attached
//                      (SCM_RIGHTS); end of stream: the server exits.
#pragma once

#include <atomic>

namespace verbfault::interposer {

class Run;

// Set by the library's constructor when VERBFAULT_FORK_SERVER names a
// socket: the next entry into the harness serves (process_run()).
extern std::atomic<bool> g_fork_server_waiting;

// Reads VERBFAULT_FORK_SERVER at load (before the run is made): arms the
// server. A value that is not an open socket stops the process with one
// line (exit_status::kUsage).
void arm_fork_server() noexcept;

// At the first entry: serves seeds until the harness closes the socket
// (then the process exits), or refuses and carries on without a seed.
// Returns in each child, with the environment of its request in place:
// the caller then makes the child's run.
void serve_seeds() noexcept;

}  // namespace verbfault::interposer
